# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""cpu kernel of Attention (ONNX opset 23, output Y), compared with ref."""

import numpy as np
import pytest

import graphkiln as gk
from graphkiln.targets.cpu.lower_matmul import LOWERINGS
from graphkiln.targets.cpu.table import SUPPORT
from graphkiln.targets.native.lower_support import node_supported

from cpu_testing import check_cpu, node, onnx_model, rand

RTOL, ATOL = 1e-4, 1e-5


def _check(q, k, v, mask=None, y_shape=None, outputs=("y",), fallback=None, **attrs):
    names = ["q", "k", "v"] + ([] if mask is None else ["mask"])
    feeds = {"q": q, "k": k, "v": v}
    if mask is not None:
        feeds["mask"] = mask
    if y_shape is None:
        y_shape = q.shape[:-1] + (v.shape[-1],) if q.ndim == 4 else None
    out_shapes = {"y": y_shape}
    model = onnx_model(
        [node("Attention", names, list(outputs), **attrs)],
        {n: feeds[n].shape for n in names},
        out_shapes,
        opset=23,
        dtypes={"mask": mask.dtype} if mask is not None else None,
    )
    options = {} if fallback is None else {"fallback": fallback}
    return check_cpu(model, feeds, rtol=RTOL, atol=ATOL, **options)


def _qkv(b=2, hq=4, hkv=4, sq=10, skv=12, d=8, dv=8, seed=0):
    return (
        rand((b, hq, sq, d), seed, low=-2, high=2),
        rand((b, hkv, skv, d), seed + 1, low=-2, high=2),
        rand((b, hkv, skv, dv), seed + 2),
    )


def test_plain():
    _check(*_qkv())


def test_other_v_head_and_scale():
    _check(*_qkv(dv=5), scale=0.3)


@pytest.mark.parametrize("hkv", [1, 2])
def test_grouped_query(hkv):
    _check(*_qkv(hq=4, hkv=hkv))


@pytest.mark.parametrize(
    "shape", [(2, 4, 10, 12), (1, 1, 10, 12), (10, 12), (2, 1, 1, 12), (4, 1, 12), (12,)]
)
def test_float_mask(shape):
    _check(*_qkv(), mask=rand(shape, 9, low=-3, high=1))


@pytest.mark.parametrize("shape", [(2, 4, 10, 12), (10, 12), (2, 1, 10, 1), (1, 12)])
def test_bool_mask(shape):
    mask = rand(shape, 9, dtype=np.bool_)
    mask[..., 0] = True
    _check(*_qkv(), mask=mask)


def test_bool_mask_row_fully_masked():
    mask = rand((10, 12), 3, dtype=np.bool_)
    mask[2] = False
    _check(*_qkv(), mask=mask)


@pytest.mark.parametrize("dtype", [np.float32, np.bool_])
def test_short_mask(dtype):
    mask = rand((1, 1, 10, 7), 4, dtype=dtype)
    if dtype == np.bool_:
        mask[..., 0] = True
    _check(*_qkv(), mask=mask)


@pytest.mark.parametrize("sq,skv", [(10, 10), (6, 12), (12, 6)])
def test_causal(sq, skv):
    _check(*_qkv(sq=sq, skv=skv), is_causal=1)


def test_causal_with_mask_and_softcap():
    _check(*_qkv(), mask=rand((10, 12), 5, low=-1, high=1), is_causal=1, softcap=2.0)


def test_softcap():
    _check(*_qkv(), softcap=1.5)


def test_three_d():
    b, sq, skv, hq, hkv, d, dv = 2, 9, 11, 4, 2, 8, 6
    q = rand((b, sq, hq * d), 0)
    k = rand((b, skv, hkv * d), 1)
    v = rand((b, skv, hkv * dv), 2)
    _check(q, k, v, y_shape=(b, sq, hq * dv), q_num_heads=hq, kv_num_heads=hkv)
    _check(
        q,
        k,
        v,
        mask=rand((sq, skv), 3, dtype=np.bool_) | np.eye(sq, skv, dtype=bool),
        y_shape=(b, sq, hq * dv),
        q_num_heads=hq,
        kv_num_heads=hkv,
        is_causal=1,
    )


def test_bert_sized():
    q, k, v = _qkv(b=1, hq=12, hkv=12, sq=128, skv=128, d=64, dv=64)
    _check(q, k, v, mask=rand((1, 1, 128, 128), 4, low=-1, high=0), scale=0.125)


def test_long_sequence_blocks():
    _check(*_qkv(b=1, hq=2, hkv=1, sq=150, skv=197, d=16, dv=16), is_causal=1)


def test_softmax_precision_float():
    _check(*_qkv(), softmax_precision=1)


def test_qk_matmul_output_refused_then_decomposed():
    # present_key / present_value run natively (test_cpu_attention_past.py); the
    # qk_matmul_output output does not: the kernel refuses it, and the node runs as its
    # ONNX function body instead (passes/inline_decompositions.py)
    q, k, v = _qkv()
    scores = (q.shape[0], q.shape[1], q.shape[2], k.shape[2])
    model = onnx_model(
        [node("Attention", ["q", "k", "v"], ["y", "", "", "qk"])],
        {"q": q.shape, "k": k.shape, "v": v.shape},
        {"y": q.shape, "qk": scores},
        opset=23,
    )
    graph = gk.parse_onnx_buffer(model)
    (attention,) = [n for n in graph.graph.nodes if n.op == "Attention"]
    assert not node_supported(attention, SUPPORT)
    graph.compile("cpu")
    assert "Attention" not in {n.op for n in graph.compiled_graph.nodes}
    check_cpu(model, {"q": q, "k": k, "v": v}, rtol=RTOL, atol=ATOL)
    check_cpu(model, {"q": q, "k": k, "v": v}, rtol=RTOL, atol=ATOL, fallback="ref")


def test_lowering_has_predicate():
    assert hasattr(LOWERINGS["Attention"], "supports")
