# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of string ops: StringNormalizer, StringSplit, StringConcat, RegexFullMatch,
TfIdfVectorizer."""

import operator
import re

import numpy as np


def _strings(x) -> np.ndarray:
    return np.asarray(x, dtype=object)


def StringNormalizer(x, *, case_change_action, is_case_sensitive, locale, stopwords):
    x = _strings(x)
    if x.ndim == 2 and x.shape[0] != 1 or x.ndim not in (1, 2):
        raise ValueError(f"StringNormalizer takes [C] or [1, C] input, got shape {list(x.shape)}")
    if is_case_sensitive:
        stop = set(stopwords or ())
        kept = [s for s in x.reshape(-1) if s not in stop]
    else:
        stop = {w.lower() for w in stopwords or ()}
        kept = [s for s in x.reshape(-1) if s.lower() not in stop]
    change = {"LOWER": str.lower, "UPPER": str.upper, "NONE": None}.get(case_change_action, ...)
    if change is ...:
        raise ValueError(
            f"case_change_action must be LOWER, UPPER or NONE, got {case_change_action!r}"
        )
    if change is not None:
        kept = [change(s) for s in kept]
    if not kept:  # all dropped: one empty string, as the spec asks
        kept = [""]
    result = np.array(kept, dtype=object)
    return result.reshape(1, -1) if x.ndim == 2 else result


def StringSplit(x, *, delimiter, maxsplit):
    x = _strings(x)
    # no (or an empty) delimiter: runs of whitespace separate, ends are trimmed (str.split())
    separator = delimiter or None
    limit = -1 if maxsplit is None else maxsplit
    pieces = [s.split(separator, limit) for s in x.reshape(-1)]
    width = max((len(p) for p in pieces), default=0)
    substrings = np.full((len(pieces), width), "", dtype=object)
    for row, parts in enumerate(pieces):
        substrings[row, : len(parts)] = parts
    counts = np.array([len(p) for p in pieces], dtype=np.int64)
    return substrings.reshape(x.shape + (width,)), counts.reshape(x.shape)


_concat = np.frompyfunc(operator.add, 2, 1)


def StringConcat(x, y):
    return np.asarray(_concat(_strings(x), _strings(y)), dtype=object)


def RegexFullMatch(x, *, pattern):
    if pattern is None:
        raise ValueError("RegexFullMatch needs its pattern attribute")
    # RE2's \w, \d, \s and \b are ASCII-only; re.ASCII gives Python's re the same meaning
    regex = re.compile(pattern, re.ASCII)
    x = _strings(x)
    matches = [regex.fullmatch(s) is not None for s in x.reshape(-1)]
    return np.array(matches, dtype=bool).reshape(x.shape)


def _pool_ngrams(ngram_counts, pool: list) -> dict:
    """n-gram (a tuple of tokens) -> its id. ngram_counts[k] is where the (k+1)-grams start
    in the pool; ids count the n-grams in pool order."""
    ngrams = {}
    starts = list(ngram_counts) + [len(pool)]
    for k in range(len(ngram_counts)):
        n = k + 1
        for at in range(starts[k], starts[k + 1], n):
            ngrams[tuple(pool[at : at + n])] = len(ngrams)
    return ngrams


def TfIdfVectorizer(
    x,
    *,
    max_gram_length,
    max_skip_count,
    min_gram_length,
    mode,
    ngram_counts,
    ngram_indexes,
    pool_int64s,
    pool_strings,
    weights,
):
    if (pool_int64s is None) == (pool_strings is None):
        raise ValueError("TfIdfVectorizer needs exactly one of pool_int64s and pool_strings")
    if mode not in ("TF", "IDF", "TFIDF"):
        raise ValueError(f"mode must be TF, IDF or TFIDF, got {mode!r}")
    x = np.asarray(x)
    pool = list(pool_int64s) if pool_int64s is not None else list(pool_strings)
    ngrams = _pool_ngrams(ngram_counts, pool)
    width = max(ngram_indexes, default=-1) + 1
    rows = x.reshape(1, -1) if x.ndim <= 1 else x.reshape(-1, x.shape[-1])
    counts = np.zeros((rows.shape[0], len(ngrams)), dtype=np.float64)
    for r, row in enumerate(rows):
        tokens = [str(t) if pool_strings is not None else int(t) for t in row]
        for n in range(max(min_gram_length, 1), max_gram_length + 1):
            # a unigram is the same whatever the skip: count it once
            for skip in range(max_skip_count + 1 if n > 1 else 1):
                step = skip + 1
                for start in range(len(tokens) - (n - 1) * step):
                    gram_id = ngrams.get(tuple(tokens[start : start + (n - 1) * step + 1 : step]))
                    if gram_id is not None:
                        counts[r, gram_id] += 1
    if mode == "IDF":
        counts = np.minimum(counts, 1)
    if mode != "TF" and weights is not None:
        counts = counts * np.asarray(weights, dtype=np.float64)
    y = np.zeros((rows.shape[0], width), dtype=np.float32)
    for gram_id, column in enumerate(ngram_indexes[: len(ngrams)]):
        y[:, column] += counts[:, gram_id]
    return y.reshape(width) if x.ndim <= 1 else y.reshape(x.shape[:-1] + (width,))


KERNELS = {
    "StringNormalizer": StringNormalizer,
    "StringSplit": StringSplit,
    "StringConcat": StringConcat,
    "RegexFullMatch": RegexFullMatch,
    "TfIdfVectorizer": TfIdfVectorizer,
}
