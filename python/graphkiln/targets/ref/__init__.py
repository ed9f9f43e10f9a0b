# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The ref target: numpy kernels, one module per op family, gathered in table.py."""
