# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The cpu target: plans run by graphkiln._core (oneDNN and our own C++ kernels)."""
