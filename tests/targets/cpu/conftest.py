# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))  # cpu_testing
