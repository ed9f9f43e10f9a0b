# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
__version__ = "0.1.0"
