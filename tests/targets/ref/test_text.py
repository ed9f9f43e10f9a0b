# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels, shape inference and importers of the string ops."""

import itertools

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model
from graphkiln.ir import DType, TensorType
from op_testing import run_op, run_op_typed

WORDS = ["apple", "Banana", "cherry", "Date", "elder", "fig", "Grape", "kiwi"]


def words(rng, shape):
    return np.array(rng.choice(WORDS, size=shape), dtype=object)


def test_string_normalizer_stopwords_and_case(rng):
    x = words(rng, (1, 12))
    y, t = run_op_typed(
        "StringNormalizer", [x], stopwords=("banana", "FIG"), case_change_action="LOWER"
    )
    assert t.dtype == DType.str and t.rank == 2 and t.dims[0] == 1
    want = [w.lower() for w in x[0] if w.lower() not in ("banana", "fig")]
    assert y.shape == (1, len(want)) and y[0].tolist() == want
    y = run_op(
        "StringNormalizer",
        [x[0]],
        stopwords=("Banana",),
        is_case_sensitive=1,
        case_change_action="UPPER",
    )
    assert y.tolist() == [w.upper() for w in x[0] if w != "Banana"]
    y = run_op("StringNormalizer", [np.array(["fig", "Fig"], object)], stopwords=("fig",))
    assert y.tolist() == [""]  # all dropped: one empty string


def test_string_split_delimiter_maxsplit_and_whitespace(rng):
    pieces = words(rng, (2, 3, 4))
    joined = np.array([["-".join(p) for p in row] for row in pieces], dtype=object)
    joined[1, 2] = "a--b"
    (y, z), (ty, tz) = run_op_typed(
        "StringSplit", [joined], num_outputs=2, delimiter="-", maxsplit=2
    )
    assert ty.dtype == DType.str and ty.rank == 3 and tz == TensorType(DType.i64, (2, 3))
    assert y.shape == (2, 3, 3)
    for i, j in itertools.product(range(2), range(3)):
        s, parts, k = joined[i, j], [], 0
        while len(parts) < 2 and "-" in s[k:]:  # at most two cuts, then the rest
            cut = s.index("-", k)
            parts.append(s[k:cut])
            k = cut + 1
        parts.append(s[k:])
        assert z[i, j] == len(parts)
        assert y[i, j].tolist() == parts + [""] * (3 - len(parts))
    spaced = np.array(["  one two\tthree ", "", "four"], dtype=object)
    y, z = run_op("StringSplit", [spaced], num_outputs=2)
    assert z.tolist() == [3, 0, 1]
    assert y.tolist() == [["one", "two", "three"], ["", "", ""], ["four", "", ""]]


def test_string_concat_broadcasts_and_regex_full_match(rng):
    x = words(rng, (3, 1))
    y = words(rng, (4,))
    z, t = run_op_typed("StringConcat", [x, y])
    assert t == TensorType(DType.str, (3, 4))
    assert z.tolist() == [[a + b for b in y] for a in x[:, 0]]
    m, t = run_op_typed("RegexFullMatch", [z], pattern=r"[a-z]\w+e\w*")
    assert t == TensorType(DType.bool, (3, 4)) and m.dtype == np.bool_
    want = [[s[0].islower() and "e" in s[2:] and s.isalpha() for s in row] for row in z.tolist()]
    assert m.tolist() == want


def count_ngrams(row, gram, max_skip):
    """How often `gram` occurs in `row` with its tokens `skip + 1` apart, for every skip."""
    n = len(gram)
    skips = range(max_skip + 1) if n > 1 else [0]
    return sum(
        all(row[start + t * (s + 1)] == gram[t] for t in range(n))
        for s in skips
        for start in range(len(row) - (n - 1) * (s + 1))
    )


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
@pytest.mark.parametrize("strings", [False, True])
def test_tfidf_vectorizer(rng, mode, strings):
    unigrams = [[3], [7], [1]]
    bigrams = [[3, 7], [7, 7], [1, 3]]
    trigrams = [[3, 3, 7]]
    grams = unigrams + bigrams + trigrams
    pool = [tok for g in grams for tok in g]
    indexes = [6, 0, 2, 1, 5, 3, 4]
    weights = rng.uniform(0.5, 2.0, len(grams)).round(3)
    x = rng.integers(0, 9, (3, 11))
    attrs = dict(
        min_gram_length=1,
        max_gram_length=3,
        max_skip_count=2,
        mode=mode,
        ngram_counts=(0, 3, 9),
        ngram_indexes=tuple(indexes),
        weights=tuple(weights.tolist()),
    )
    if strings:
        x = np.array([[f"t{v}" for v in row] for row in x], dtype=object)
        attrs["pool_strings"] = tuple(f"t{v}" for v in pool)
        grams = [[f"t{v}" for v in g] for g in grams]
    else:
        x = x.astype(np.int32)
        attrs["pool_int64s"] = tuple(pool)
    y, t = run_op_typed("TfIdfVectorizer", [x], **attrs)
    assert t == TensorType(DType.f32, (3, 7)) and y.dtype == np.float32
    want = np.zeros((3, 7))
    for r in range(3):
        for k, gram in enumerate(grams):
            c = count_ngrams(list(x[r]), gram, 2)
            value = {"TF": c, "IDF": min(c, 1) * weights[k], "TFIDF": c * weights[k]}[mode]
            want[r, indexes[k]] = value
    np.testing.assert_allclose(y, want, rtol=1e-6)
    assert want.sum() > 0


def test_importer_text_ops():
    nodes = [
        helper.make_node(
            "StringNormalizer", ["x"], ["n"], case_change_action="UPPER", stopwords=["b"]
        ),
        helper.make_node(
            "TfIdfVectorizer",
            ["n"],
            ["v"],
            min_gram_length=1,
            max_gram_length=1,
            max_skip_count=0,
            mode="TF",
            ngram_counts=[0],
            ngram_indexes=[1, 0],
            pool_strings=["A", "C"],
        ),
    ]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.STRING, [4])],
        [helper.make_tensor_value_info("v", TensorProto.FLOAT, None)],
        opset=10,
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString()).compile("ref")
    assert prog.get_output_shapes() == [TensorType(DType.f32, (2,))]
    (v,) = prog.run({"x": np.array(["a", "b", "c", "a"], dtype=object)})
    assert v.tolist() == [1.0, 2.0]
