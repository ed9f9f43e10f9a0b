# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The gpu target: the native layer's plan machinery (targets/native), HIP kernels (src/gpu) on AMD
or NVIDIA."""
