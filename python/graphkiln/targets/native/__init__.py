# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The native back end's shared layer: what the cpu and gpu targets both build on (the
lowering context and Plan, specialization to static shapes, pointwise emission and its
opcode table, and the lowerings of kernels both C++ back ends implement). Imports nothing
from targets/cpu or targets/gpu; README.md says what lives where."""
