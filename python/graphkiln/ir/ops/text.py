# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of string ops: StringNormalizer, StringSplit, StringConcat, RegexFullMatch,
TfIdfVectorizer."""

from __future__ import annotations

from ..dtypes import DType
from ..schema import REQUIRED, define
from .. import infer
from ..types import TensorType, fresh_dim


def _string_normalizer(ctx):
    # [C] -> [C'] or [1, C] -> [1, C']: stopwords may drop any number of elements
    x = ctx.tensor(0)
    if x.dims is None:
        return [TensorType(DType.str, None)]
    return [TensorType(DType.str, tuple(x.dims[:-1]) + (fresh_dim(),))]


def _string_split(ctx):
    x = ctx.tensor(0)
    if x.dims is None:
        return [TensorType(DType.str, None), TensorType(DType.i64, None)]
    return [TensorType(DType.str, x.dims + (fresh_dim(),)), TensorType(DType.i64, x.dims)]


def _tfidf_vectorizer(ctx):
    x = ctx.tensor(0)
    width = max(ctx.attrs["ngram_indexes"], default=-1) + 1
    if x.dims is None:
        return [TensorType(DType.f32, None)]
    return [TensorType(DType.f32, tuple(x.dims[:-1]) + (width,))]


define(
    "StringNormalizer",
    ("X",),
    ("Y",),
    [
        ("case_change_action", "str", "NONE"),
        ("is_case_sensitive", "int", 0),
        ("locale", "str", None),
        ("stopwords", "strs", None),
    ],
    _string_normalizer,
)
define(
    "StringSplit",
    ("X",),
    ("Y", "Z"),
    [("delimiter", "str", None), ("maxsplit", "int", None)],
    _string_split,
)
define("StringConcat", ("X", "Y"), ("Z",), (), infer.elementwise())
define("RegexFullMatch", ("X",), ("Y",), [("pattern", "str", None)], infer.elementwise(DType.bool))
define(
    "TfIdfVectorizer",
    ("X",),
    ("Y",),
    [
        ("max_gram_length", "int", REQUIRED),
        ("max_skip_count", "int", REQUIRED),
        ("min_gram_length", "int", REQUIRED),
        ("mode", "str", REQUIRED),
        ("ngram_counts", "ints", REQUIRED),
        ("ngram_indexes", "ints", REQUIRED),
        ("pool_int64s", "ints", None),
        ("pool_strings", "strs", None),
        ("weights", "floats", None),
    ],
    _tfidf_vectorizer,
)
