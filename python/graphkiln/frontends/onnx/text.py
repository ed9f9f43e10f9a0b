# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of string ops: StringNormalizer, StringSplit, StringConcat, RegexFullMatch,
TfIdfVectorizer."""

# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "StringNormalizer": (10, None),
    "StringSplit": (20, None),
    "StringConcat": (20, None),
    "RegexFullMatch": (20, None),
    "TfIdfVectorizer": (9, None),
}
