# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of signal processing: DFT, STFT, window functions, MelWeightMatrix."""

from ..schema import define
from .. import infer
