# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of Softmax, LogSoftmax, Hardmax and the losses built on them."""

from ..schema import define
from .. import infer
