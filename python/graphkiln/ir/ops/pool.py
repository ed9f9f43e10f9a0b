# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of pooling: AveragePool, MaxPool, LpPool, Global*Pool, MaxUnpool, RoiAlign."""

from ..schema import define
from .. import infer
