# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of control flow with subgraphs: If, Loop, Scan."""

from ..schema import define
from .. import infer
