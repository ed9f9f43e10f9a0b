# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of string ops: StringNormalizer, StringSplit, StringConcat, RegexFullMatch, TfIdfVectorizer."""

import numpy as np

KERNELS = {
}
