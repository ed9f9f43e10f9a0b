# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of recurrent layers: RNN, GRU, LSTM."""

from ..schema import define
from .. import infer
