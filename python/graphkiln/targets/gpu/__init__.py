# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The gpu target: the cpu target's plan machinery, HIP kernels (src/gpu) on AMD or NVIDIA."""
