# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""onnxruntime's com.microsoft ops (frontends/onnx/microsoft_*.py): each case of
microsoft_models.py on ref and cpu against a numpy version of the documented semantics
(microsoft_numpy.py) and against onnxruntime's outputs recorded by
tools/record_microsoft_ops.py (data/microsoft_ops.npz; BiasAdd has no cpu kernel in
onnxruntime, so numpy only); the refused forms; and the project's BERT / GPT-2 exports as
onnxruntime's transformer optimizer rewrites them (data/*_ort_optimized.onnx) against
onnxruntime's outputs at two shapes, on ref and cpu (no fallback)."""

from __future__ import annotations

import collections
import os

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import graphkiln as gk
from microsoft_models import MS, OPTIMIZED, build_cases, one_node_model
from microsoft_numpy import EXPECTED

DATA = os.path.join(os.path.dirname(__file__), "data")
CASES = build_cases()
RECORDED = np.load(os.path.join(DATA, "microsoft_ops.npz"))
NOT_IN_ONNXRUNTIME_CPU = {"bias_add"}
# the com.microsoft ops onnxruntime's optimizer writes into the two models (opt_level 0)
OPTIMIZED_OPS = {
    "bert_tiny": {"Attention", "BiasGelu", "EmbedLayerNormalization", "SkipLayerNormalization"},
    "gpt2_tiny": {"FastGelu", "SkipLayerNormalization"},
}


def _compile(model: onnx.ModelProto, target: str, **kw):
    return gk.parse_onnx_buffer(model.SerializeToString(), **kw).compile(target)


def _close(got, expected, what, rtol=1e-4):
    assert got.shape == expected.shape, what
    if np.issubdtype(got.dtype, np.integer):  # the quantized outputs of the QLinear* ops
        # one unit apart at most: a real value on a rounding boundary (k + 0.5) may round
        # either way, as float32 / float64 or onnxruntime's integer and table arithmetic
        # put it a hair to one side of it
        assert got.dtype == expected.dtype, what
        diff = np.abs(got.astype(np.int64) - expected.astype(np.int64))
        assert diff.max(initial=0) <= 1, f"{what}: {diff.max()} units apart"
        return
    scale = float(np.abs(expected).max()) or 1.0
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * scale, err_msg=what)


def test_every_case_has_a_numpy_version_and_a_recording():
    assert set(EXPECTED) == set(CASES)
    for name, (_, feeds) in CASES.items():
        recorded = any(k.startswith(f"{name}/output/") for k in RECORDED.files)
        assert recorded != (name in NOT_IN_ONNXRUNTIME_CPU), name
        for key, value in feeds.items():  # the model builders still make the recorded feeds
            np.testing.assert_array_equal(RECORDED[f"{name}/input/{key}"], value)


@pytest.mark.parametrize("target", ["ref", "cpu"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_numpy_and_onnxruntime(name, target):
    model, feeds = CASES[name]
    (proto,) = model.graph.node
    assert proto.domain == MS
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    attrs = {a.name: helper.get_attribute_value(a) for a in proto.attribute}
    got = _compile(model, target).run(feeds)
    outputs = [o.name for o in model.graph.output]
    expected = EXPECTED[name](feeds, consts, attrs)
    assert len(got) == len(outputs) == len(expected)
    for out, g, e in zip(outputs, got, expected):
        _close(g, np.asarray(e).astype(g.dtype), f"{name} {out} vs numpy")
        key = f"{name}/output/{out}"
        if key in RECORDED.files:
            assert g.dtype == RECORDED[key].dtype
            _close(g, RECORDED[key], f"{name} {out} vs onnxruntime")


def _refused(model: onnx.ModelProto, *words: str):
    with pytest.raises(gk.UnsupportedOperatorError) as info:
        gk.parse_onnx_buffer(model.SerializeToString())
    message = str(info.value)
    for word in words:
        assert word in message, message


def test_a_com_microsoft_op_not_imported_is_refused_with_its_name_and_domain():
    x = np.ones((2, 3), np.float32) * 0.5
    model, _ = one_node_model("CDist", ["x", "x"], ["y"], {"x": x}, {})
    _refused(model, "'CDist'", "'com.microsoft'")


def test_a_com_microsoft_opset_other_than_1_is_refused():
    model, _ = CASES["gelu"]
    model = onnx.ModelProto.FromString(model.SerializeToString())
    model.opset_import[1].version = 2
    _refused(model, "'Gelu'", "'com.microsoft'", "opset 1 of com.microsoft")


def _with_node(name: str, edit) -> onnx.ModelProto:
    model = onnx.ModelProto.FromString(CASES[name][0].SerializeToString())
    edit(model.graph)
    return model


def test_attention_past_and_present_are_refused():
    def with_present(graph):
        graph.node[0].output.append("present")

    _refused(_with_node("attention_mask_2d", with_present), "past / present")


def test_attention_left_padding_index_form_is_refused():
    def two_per_batch(graph):  # mask_index of [2 * batch]: end and start positions
        (mask,) = [i for i in graph.input if i.name == "mask"]
        mask.type.tensor_type.shape.dim[0].dim_value = 4

    _refused(_with_node("attention_lengths", two_per_batch), "[2 * batch]")


def test_multi_head_attention_packed_qkv_is_refused():
    q = np.ones((2, 4, 2, 3, 4), np.float32) * 0.5
    model, _ = one_node_model("MultiHeadAttention", ["q"], ["y"], {"q": q}, {}, {"num_heads": 2})
    _refused(model, "packed QKV")


def test_fused_conv_activation_not_imported_is_refused():
    def elu(graph):
        (act,) = [a for a in graph.node[0].attribute if a.name == "activation"]
        act.s = b"Elu"

    _refused(_with_node("fused_conv_relu", elu), "activation 'Elu'")


def _qlinear_softmax_numpy(q, scale, zero, y_scale, y_zero, axis, opset):
    """The documented meaning: quantize(Softmax(dequantize(q))), Softmax of `opset`."""
    real = (q.astype(np.float64) - zero) * scale
    if opset < 13:  # over the input flattened to 2-D at axis
        flat = real.reshape(int(np.prod(q.shape[:axis])), -1)
        e = np.exp(flat - flat.max(axis=1, keepdims=True))
        soft = (e / e.sum(axis=1, keepdims=True)).reshape(q.shape)
    else:
        e = np.exp(real - real.max(axis=axis, keepdims=True))
        soft = e / e.sum(axis=axis, keepdims=True)
    return np.clip(np.rint(soft / y_scale) + y_zero, 0, 255).astype(np.uint8)


@pytest.mark.parametrize("opset,axis", [(12, 1), (12, 2), (13, 1), (13, -1)])
@pytest.mark.parametrize("target", ["ref", "cpu"])
def test_qlinear_softmax_matches_the_softmax_of_its_opset(opset, axis, target):
    rng = np.random.default_rng(31)
    q = rng.integers(0, 256, (2, 3, 5), dtype=np.uint8)
    consts = {
        "xs": np.array(0.05, np.float32),
        "xz": np.array(120, np.uint8),
        "ys": np.array(1 / 256, np.float32),
        "yz": np.array(0, np.uint8),
    }
    model, feeds = one_node_model(
        "QLinearSoftmax",
        ["q", "xs", "xz", "ys", "yz"],
        ["y"],
        {"q": q},
        consts,
        {"axis": axis, "opset": opset},
    )
    model.graph.output[0].type.tensor_type.elem_type = onnx.TensorProto.UINT8
    got = _compile(model, target).run(feeds)[0]
    expected = _qlinear_softmax_numpy(q, 0.05, 120, 1 / 256, 0, axis, opset)
    _close(got, expected, f"QLinearSoftmax opset {opset} axis {axis}")
    if opset < 13 and axis == 1:  # the flattened form is not the per-axis one here
        assert (
            np.abs(
                expected.astype(int)
                - _qlinear_softmax_numpy(q, 0.05, 120, 1 / 256, 0, axis, 13).astype(int)
            ).max()
            > 1
        )


def test_qlinear_softmax_without_its_opset_is_refused():
    q = np.arange(6, dtype=np.uint8).reshape(2, 3)
    consts = {"xs": np.array(0.1, np.float32), "ys": np.array(1 / 256, np.float32)}
    model, _ = one_node_model("QLinearSoftmax", ["q", "xs", "", "ys"], ["y"], {"q": q}, consts)
    _refused(model, "opset")


def _optimized_cases(name: str) -> list[tuple[dict, list]]:
    data = np.load(os.path.join(DATA, f"{name}_ort_optimized.npz"))
    cases = []
    for j in sorted({k.split(":")[1] for k in data.files if k.startswith("input:")}):
        feeds = {k.split(":", 2)[2]: data[k] for k in data.files if k.startswith(f"input:{j}:")}
        cases.append((feeds, [data[k] for k in data.files if k.startswith(f"output:{j}:")]))
    return cases


@pytest.mark.parametrize("name", sorted(OPTIMIZED))
def test_optimized_model_holds_the_expected_com_microsoft_ops(name):
    path = os.path.join(DATA, f"{name}_ort_optimized.onnx")
    assert os.path.getsize(path) < 1 << 20
    model = onnx.load(path)
    ops = collections.Counter(n.op_type for n in model.graph.node if n.domain == MS)
    assert set(ops) == OPTIMIZED_OPS[name]


@pytest.mark.parametrize("target", ["ref", "cpu"])
@pytest.mark.parametrize("name", sorted(OPTIMIZED))
def test_optimized_model_matches_onnxruntime(name, target):
    program = gk.parse_onnx(os.path.join(DATA, f"{name}_ort_optimized.onnx"), default_dim=None)
    assert any(not isinstance(d, int) for v in program.graph.inputs for d in v.type.dims)
    compiled = program.compile(target)  # cpu: no fallback, every node native
    cases = _optimized_cases(name)
    assert len({tuple(f[k].shape for k in f) for f, _ in cases}) == 2
    for feeds, expected in cases:
        got = compiled.run(feeds)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            _close(g, e, f"{name} on {target}", rtol=1e-3)


def test_group_query_attention_right_padded_prompts():
    """A batch of prompts of different lengths (right padding, seqlens_k per row): each
    row's valid queries see only its own keys (numpy: microsoft_gqa_numpy.py)."""
    from microsoft_gqa_models import gqa_case
    from microsoft_gqa_numpy import group_query_attention

    model, feeds = gqa_case(np.random.default_rng(7), 2, 6, 0, 2, 1)
    feeds["seqlens_k"] = np.array([4, 2], np.int32)  # 5 and 3 tokens
    (proto,) = model.graph.node
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    attrs = {a.name: helper.get_attribute_value(a) for a in proto.attribute}
    expected = group_query_attention(feeds, consts, attrs)[0]
    for target in ("ref", "cpu"):
        got = np.asarray(_compile(model, target).run(feeds)[0])
        for row, valid in ((0, 5), (1, 3)):
            _close(got[row, :valid], expected[row, :valid], f"{target} row {row}")


@pytest.mark.parametrize("extra", ["head_sink", "query_seqlens"])
def test_group_query_attention_refuses_what_it_does_not_import(extra):
    from microsoft_gqa_models import gqa_case

    model, _ = gqa_case(np.random.default_rng(8), 1, 2, 1, 2, 1)
    (proto,) = model.graph.node
    position = {"head_sink": 11, "query_seqlens": 16}[extra]
    while len(proto.input) <= position:
        proto.input.append("")
    proto.input[position] = "seqlens_k"
    _refused(model, "GroupQueryAttention", extra)
