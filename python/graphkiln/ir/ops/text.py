# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of string ops: StringNormalizer, StringSplit, StringConcat, RegexFullMatch, TfIdfVectorizer."""

from ..schema import define
from .. import infer
