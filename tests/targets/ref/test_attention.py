# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels of Attention, RotaryEmbedding, SwiGLU, LinearAttention (checked against loops
written out here), and ONNX function expansion."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model
from graphkiln.frontends.onnx import importer as onnx_importer, ops_table
from graphkiln.frontends.onnx.functions import expand_function, import_function_body
from graphkiln.ir import DType, Graph, TensorType
from graphkiln.program import Program
from op_testing import random_normal, run_op


def reference_attention(q, k, v, scale, allowed=None, bias=None, softcap=0.0):
    """q [B, Hq, S, D], k/v [B, Hkv, T, D]; loops over batch and heads. `allowed` is a
    [B, S, T] boolean (or None), `bias` a [S, T] float added to the scores."""
    B, Hq, S, _ = q.shape
    group = Hq // k.shape[1]
    out = np.zeros((B, Hq, S, v.shape[-1]))
    for b in range(B):
        for h in range(Hq):
            s = (q[b, h].astype(np.float64) @ k[b, h // group].T.astype(np.float64)) * scale
            if softcap:
                s = softcap * np.tanh(s / softcap)
            if bias is not None:
                s = s + bias
            if allowed is not None:
                s = np.where(allowed[b], s, -np.inf)
            for i in range(S):
                if np.all(np.isneginf(s[i])):
                    continue  # a row with no key left gives zeros
                e = np.exp(s[i] - s[i].max())
                out[b, h, i] = (e / e.sum()) @ v[b, h // group]
    return out


def test_attention_4d_gqa_causal_with_past():
    B, Hq, Hkv, S, P, D = 2, 4, 2, 3, 2, 8
    q = random_normal((B, Hq, S, D), 1)
    k = random_normal((B, Hkv, S, D), 2)
    v = random_normal((B, Hkv, S, D), 3)
    pk, pv = random_normal((B, Hkv, P, D), 4), random_normal((B, Hkv, P, D), 5)
    y, present_k, present_v = run_op(
        "Attention", [q, k, v, None, pk, pv], num_outputs=3, is_causal=1
    )
    keys, values = np.concatenate([pk, k], 2), np.concatenate([pv, v], 2)
    np.testing.assert_array_equal(present_k, keys)
    np.testing.assert_array_equal(present_v, values)
    # query i sits at absolute position P + i: it sees keys 0..P+i
    allowed = np.arange(S + P)[None, :] <= np.arange(S)[:, None] + P
    ref = reference_attention(
        q, keys, values, 1 / np.sqrt(D), np.broadcast_to(allowed, (B, S, S + P))
    )
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_attention_3d_float_mask_softcap_scale_and_qk_output():
    B, S, T, Hq, Hkv, D, Dv = 2, 3, 5, 2, 1, 4, 6
    q = random_normal((B, S, Hq * D), 10)
    k = random_normal((B, T, Hkv * D), 11)
    v = random_normal((B, T, Hkv * Dv), 12)
    mask = random_normal((S, T), 13)
    y, _, _, qk = run_op(
        "Attention",
        [q, k, v, mask],
        num_outputs=4,
        q_num_heads=Hq,
        kv_num_heads=Hkv,
        scale=0.3,
        softcap=2.0,
        qk_matmul_output_mode=1,
    )
    assert y.shape == (B, S, Hq * Dv)
    q4 = q.reshape(B, S, Hq, D).transpose(0, 2, 1, 3)
    k4 = k.reshape(B, T, Hkv, D).transpose(0, 2, 1, 3)
    v4 = v.reshape(B, T, Hkv, Dv).transpose(0, 2, 1, 3)
    ref = reference_attention(q4, k4, v4, 0.3, bias=mask, softcap=2.0)
    np.testing.assert_allclose(y, ref.transpose(0, 2, 1, 3).reshape(B, S, -1), rtol=1e-5, atol=1e-6)
    raw = np.einsum("bhsd,btd->bhst", q4.astype(np.float64), k4[:, 0].astype(np.float64)) * 0.3
    np.testing.assert_allclose(qk, 2.0 * np.tanh(raw / 2.0), rtol=1e-5, atol=1e-6)


def test_attention_bool_mask_fully_masked_row_is_zero_and_nonpad():
    B, H, S, T, D = 2, 1, 3, 4, 4
    q = random_normal((B, H, S, D), 20)
    k = random_normal((B, H, T, D), 21)
    v = random_normal((B, H, T, D), 22)
    mask = np.array([[True, True, False, False], [False] * 4, [True] * 4])
    nonpad = np.array([4, 2], np.int64)
    y = run_op("Attention", [q, k, v, mask, None, None, nonpad])
    assert not np.isnan(y).any()
    allowed = mask[None] & (np.arange(T)[None, None, :] < nonpad[:, None, None])
    np.testing.assert_allclose(
        y, reference_attention(q, k, v, 1 / np.sqrt(D), allowed), rtol=1e-5, atol=1e-6
    )
    assert np.all(y[:, :, 1] == 0)


def test_attention_sliding_window():
    S, D = 5, 2
    q = random_normal((1, 1, S, D), 30)
    k = random_normal((1, 1, S, D), 31)
    v = random_normal((1, 1, S, D), 32)
    y = run_op("Attention", [q, k, v], left_window_size=1, right_window_size=1)
    i, j = np.arange(S)[:, None], np.arange(S)[None, :]
    allowed = (j >= i - 1) & (j <= i + 1)
    np.testing.assert_allclose(
        y, reference_attention(q, k, v, 1 / np.sqrt(D), allowed[None]), rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding_partial_with_position_ids(interleaved):
    B, H, S, D, R = 2, 2, 3, 8, 4
    x = random_normal((B, H, S, D), 40)
    angles = np.random.default_rng(41).uniform(0, 6, (10, R // 2))
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    pos = np.array([[0, 4, 9], [3, 2, 1]], np.int64)
    y = run_op(
        "RotaryEmbedding", [x, cos, sin, pos], interleaved=interleaved, rotary_embedding_dim=R
    )
    ref = x.astype(np.float64).copy()
    for b in range(B):
        for s in range(S):
            for n in range(R // 2):
                a, c = (2 * n, 2 * n + 1) if interleaved else (n, n + R // 2)
                theta = angles[pos[b, s], n]
                x1, x2 = x[b, :, s, a], x[b, :, s, c]
                ref[b, :, s, a] = x1 * np.cos(theta) - x2 * np.sin(theta)
                ref[b, :, s, c] = x1 * np.sin(theta) + x2 * np.cos(theta)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
    # the 3-D form (heads packed in the last axis, no position ids) gives the same numbers
    x3 = x.transpose(0, 2, 1, 3).reshape(B, S, H * D)
    y3 = run_op(
        "RotaryEmbedding",
        [x3, cos[pos], sin[pos]],
        interleaved=interleaved,
        rotary_embedding_dim=R,
        num_heads=H,
    )
    np.testing.assert_allclose(y3, y.transpose(0, 2, 1, 3).reshape(B, S, H * D), rtol=1e-6)


def test_swiglu_float16():
    a, b = random_normal((3, 4), 50, dtype=np.float16), random_normal((3, 4), 51, dtype=np.float16)
    y = run_op("SwiGLU", [a, b], alpha=1.5)
    assert y.dtype == np.float16
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(y, a64 / (1 + np.exp(-1.5 * a64)) * b64, rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize("rule", ["linear", "gated", "delta", "gated_delta"])
def test_linear_attention_rules(rule):
    B, T, Hq, Hkv, dk, dv = 1, 4, 2, 1, 3, 2
    q, k = random_normal((B, T, Hq * dk), 60), random_normal((B, T, Hkv * dk), 61) * 0.5
    v, past = random_normal((B, T, Hkv * dv), 62), random_normal((B, Hkv, dk, dv), 63)
    decay = -np.abs(random_normal((B, T, Hkv * dk), 64))
    beta = 1 / (1 + np.exp(-random_normal((B, T, Hkv), 65)))
    out, state = run_op(
        "LinearAttention",
        [q, k, v, past, decay, beta],
        num_outputs=2,
        q_num_heads=Hq,
        kv_num_heads=Hkv,
        update_rule=rule,
    )
    S = past[0, 0].astype(np.float64)
    ref = np.zeros((T, Hq, dv))
    for t in range(T):
        kt, vt = k[0, t].astype(np.float64), v[0, t].astype(np.float64)
        if "gated" in rule:
            S = np.exp(decay[0, t])[:, None] * S
        if "delta" in rule:
            vt = beta[0, t, 0] * (vt - S.T @ kt)
        S = S + np.outer(kt, vt)
        for h in range(Hq):
            ref[t, h] = q[0, t, h * dk : (h + 1) * dk] @ S / np.sqrt(dk)
    np.testing.assert_allclose(out[0], ref.reshape(T, Hq * dv), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(state[0, 0], S, rtol=1e-5, atol=1e-5)


def test_attention_shape_inference():
    g = Graph()
    q = g.add_input("q", TensorType(DType.f16, ("B", "S", 32)))
    k = g.add_input("k", TensorType(DType.f16, ("B", "T", 16)))
    v = g.add_input("v", TensorType(DType.f16, ("B", "T", 24)))
    pk = g.add_input("pk", TensorType(DType.f16, ("B", 2, 5, 8)))
    pv = g.add_input("pv", TensorType(DType.f16, ("B", 2, 5, 12)))
    node = g.add_node(
        "Attention", [q, k, v, None, pk, pv], {"q_num_heads": 4, "kv_num_heads": 2}, num_outputs=4
    )
    y, present_k, present_v, qk = (o.type for o in node.outputs)
    assert y == TensorType(DType.f16, ("B", "S", 48))
    assert present_k.dims[:2] == ("B", 2) and present_k.dims[3] == 8
    assert present_v.dims[3] == 12 and qk.dims[:3] == ("B", 4, "S")
    unknown = g.add_input("u", TensorType(DType.f32, None))
    node = g.add_node("Attention", [unknown, unknown, unknown], {}, num_outputs=1)
    assert node.outputs[0].type.dtype == DType.f32


def test_import_attention_opset23():
    B, H, S, D = 1, 2, 3, 4
    model = make_model(
        [helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1, scale=0.5)],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [B, H, S, D]) for n in "qkv"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, H, S, D])],
        opset=23,
    )
    q = random_normal((B, H, S, D), 70)
    k = random_normal((B, H, S, D), 71)
    v = random_normal((B, H, S, D), 72)
    (y,) = (
        graphkiln.parse_onnx_buffer(model.SerializeToString())
        .compile("ref")
        .run({"q": q, "k": k, "v": v})
    )
    allowed = np.tril(np.ones((S, S), bool))[None]
    np.testing.assert_allclose(y, reference_attention(q, k, v, 0.5, allowed), rtol=1e-5, atol=1e-6)


# -- function expansion ----------------------------------------------------------------


@pytest.fixture
def expanding_importer(monkeypatch):
    """The importer with the hook proposed for `_Importer.node`: an op without converter is
    imported as its ONNX function body."""
    original = onnx_importer._Importer.node

    def node(self, proto, graph, scope):
        opset = self.opsets.get("", self.opsets.get("ai.onnx"))
        if (
            proto.domain not in ("", "ai.onnx")
            or not ops_table.find_converter(proto.op_type, opset)[0]
        ):
            if expand_function(self, proto, graph, scope, opset):
                return
        return original(self, proto, graph, scope)

    monkeypatch.setattr(onnx_importer._Importer, "node", node)
    return monkeypatch


def test_expand_hand_written_function_with_attribute_reference_and_default():
    # f<shift>(x, y?) = Relu(x + shift_constant) ; y is an omitted optional formal input
    # value = @shift, written out: make_attribute_ref takes ref_attr_name from onnx 1.22 on
    shift = onnx.AttributeProto(
        name="value", ref_attr_name="shift", type=onnx.AttributeProto.TENSOR
    )
    const = helper.make_node("Constant", [], ["c"])
    const.attribute.append(shift)
    function = helper.make_function(
        "test.domain",
        "ShiftRelu",
        ["x", "y"],
        ["out"],
        [
            const,
            helper.make_node("Add", ["x", "c"], ["s"]),
            helper.make_node("Relu", ["s"], ["out"]),
        ],
        [helper.make_opsetid("", 17)],
        attributes=["shift"],
    )
    node = helper.make_node("ShiftRelu", ["a", ""], ["b"], domain="test.domain")
    importer = onnx_importer._Importer({"": 17}, {}, None)
    graph = Graph()
    scope = {"a": graph.add_input("a", TensorType(DType.f32, (4,)))}
    default = helper.make_attribute("shift", np.array([-1.0], np.float32))
    import_function_body(importer, node, function, graph, scope, {"shift": default})
    graph.outputs = [scope["b"]]
    assert [n.op for n in graph.nodes] == ["Constant", "Add", "Relu"]
    x = random_normal((4,), 80) + 1
    (y,) = Program(graph).compile("ref").run({"a": x})
    np.testing.assert_allclose(y, np.maximum(x - 1, 0))


def test_expand_swiglu_through_its_function_body(expanding_importer):
    # the ops of SwiGLU's body (and of Swish's, one level down) all have converters
    assert all(op in ops_table.TABLE for op in ("Mul", "Sigmoid", "CastLike"))
    expanding_importer.delitem(ops_table.TABLE, "SwiGLU")
    expanding_importer.delitem(ops_table.TABLE, "Swish", raising=False)  # nests one level more
    model = make_model(
        [helper.make_node("SwiGLU", ["a", "b"], ["y"], alpha=0.5)],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in "ab"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        opset=28,
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString())
    a, b = random_normal((2, 3), 90), random_normal((2, 3), 91)
    (y,) = prog.compile("ref").run({"a": a, "b": b})
    np.testing.assert_allclose(y, a / (1 + np.exp(-0.5 * a)) * b, rtol=1e-5)
    ops = {n.op for n in prog.graph.nodes}
    assert "SwiGLU" not in ops and "Swish" not in ops and {"Mul", "Sigmoid"} <= ops
    assert [v.name for v in prog.graph.outputs] == ["y"]  # the model's name, not the body's


def test_expand_context_dependent_rotary_embedding(expanding_importer):
    expanding_importer.delitem(ops_table.TABLE, "RotaryEmbedding")
    B, S, H, D = 1, 3, 2, 4
    model = make_model(
        [helper.make_node("RotaryEmbedding", ["x", "cos", "sin"], ["y"], num_heads=H)],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, H * D]),
            helper.make_tensor_value_info("cos", TensorProto.FLOAT, [B, S, D // 2]),
            helper.make_tensor_value_info("sin", TensorProto.FLOAT, [B, S, D // 2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, S, H * D])],
        opset=23,
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString())  # every body op imported
    assert "RotaryEmbedding" not in {n.op for n in prog.graph.nodes}
    x = random_normal((B, S, H * D), 92)
    angles = random_normal((B, S, D // 2), 93)
    feeds = {"x": x, "cos": np.cos(angles), "sin": np.sin(angles)}
    (y,) = prog.compile("ref").run(feeds)
    expanding_importer.undo()
    from graphkiln.targets.ref.attention import RotaryEmbedding

    np.testing.assert_allclose(
        y, RotaryEmbedding(x, feeds["cos"], feeds["sin"], num_heads=H), rtol=1e-5, atol=1e-6
    )


def test_expand_preview_domain_flex_attention(expanding_importer):
    B, H, S, D = 1, 2, 3, 4
    model = helper.make_model(
        helper.make_graph(
            [
                helper.make_node(
                    "FlexAttention", ["q", "k", "v"], ["y"], domain="ai.onnx.preview", scale=0.25
                )
            ],
            "flex",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, [B, H, S, D]) for n in "qkv"],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, H, S, D])],
        ),
        opset_imports=[helper.make_opsetid("", 26), helper.make_opsetid("ai.onnx.preview", 1)],
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString())  # every body op imported
    assert "FlexAttention" not in {n.op for n in prog.graph.nodes}
    q = random_normal((B, H, S, D), 100)
    k = random_normal((B, H, S, D), 101)
    v = random_normal((B, H, S, D), 102)
    (y,) = prog.compile("ref").run({"q": q, "k": k, "v": v})
    np.testing.assert_allclose(y, reference_attention(q, k, v, 0.25), rtol=1e-5, atol=1e-6)
