# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Small one-op (or few-op) models for the gpu target, each with seeded random feeds:
CASES maps an id to a function returning (serialized model, feeds)."""

from __future__ import annotations

import numpy as np

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cpu"))
from cpu_testing import node, onnx_model, rand  # noqa: E402

CASES: dict = {}


def case(name):
    def register(fn):
        CASES[name] = fn
        return fn

    return register


def _unary(op, low=-2.0, high=2.0, **attrs):
    def make():
        shape = (2, 3, 5)
        return (
            onnx_model([node(op, ["x"], ["y"], **attrs)], {"x": shape}, {"y": shape}),
            {"x": rand(shape, 1, low=low, high=high)},
        )

    return make


for _op in [
    "Relu",
    "Sigmoid",
    "Tanh",
    "Exp",
    "Neg",
    "Abs",
    "Erf",
    "Softsign",
    "Softplus",
    "HardSwish",
    "Floor",
    "Ceil",
    "Sin",
    "Cos",
    "Atan",
    "Sign",
    "Mish",
]:
    CASES[f"unary_{_op}"] = _unary(_op)
CASES["unary_Log"] = _unary("Log", 0.1, 3.0)
CASES["unary_Sqrt"] = _unary("Sqrt", 0.1, 3.0)
CASES["unary_Reciprocal"] = _unary("Reciprocal", 0.5, 3.0)
CASES["unary_LeakyRelu"] = _unary("LeakyRelu", alpha=0.2)
CASES["unary_Elu"] = _unary("Elu", alpha=0.7)
CASES["unary_Selu"] = _unary("Selu")
CASES["unary_HardSigmoid"] = _unary("HardSigmoid", alpha=0.3, beta=0.4)
CASES["unary_Gelu"] = _unary("Gelu")
CASES["unary_Gelu_tanh"] = _unary("Gelu", approximate="tanh")


def _binary(op, a_shape, b_shape, out_shape, low=-2.0, high=2.0):
    def make():
        model = onnx_model(
            [node(op, ["a", "b"], ["y"])], {"a": a_shape, "b": b_shape}, {"y": out_shape}
        )
        return model, {
            "a": rand(a_shape, 2, low=low, high=high),
            "b": rand(b_shape, 3, low=low, high=high),
        }

    return make


for _op in ["Add", "Sub", "Mul", "Max", "Min"]:
    CASES[f"binary_{_op}_broadcast"] = _binary(_op, (2, 3, 4, 5), (3, 1, 5), (2, 3, 4, 5))
CASES["binary_Div"] = _binary("Div", (4, 6), (6,), (4, 6), 0.5, 2.0)
CASES["binary_Pow"] = _binary("Pow", (4, 6), (4, 6), (4, 6), 0.5, 2.0)


@case("compare_where")
def _():
    model = onnx_model(
        [node("Greater", ["a", "b"], ["c"]), node("Where", ["c", "a", "b"], ["y"])],
        {"a": (3, 7), "b": (7,)},
        {"y": (3, 7)},
    )
    return model, {"a": rand((3, 7), 4), "b": rand((7,), 5)}


@case("cast_to_int_and_bool")
def _():
    model = onnx_model(
        [node("Cast", ["x"], ["i"], to=7), node("Cast", ["x"], ["b"], to=9)],
        {"x": (4, 5)},
        {"i": (4, 5), "b": (4, 5)},
        dtypes={"i": np.int64, "b": np.bool_},
    )
    return model, {"x": rand((4, 5), 6, low=-9, high=9)}


@case("fused_chain")
def _():
    nodes = [
        node("Mul", ["x", "s"], ["a"]),
        node("Add", ["a", "b"], ["c"]),
        node("Sigmoid", ["c"], ["d"]),
        node("Mul", ["c", "d"], ["y"]),
    ]
    model = onnx_model(
        nodes,
        {"x": (2, 8, 3, 3)},
        {"y": (2, 8, 3, 3)},
        {"s": rand((8, 1, 1), 7), "b": rand((1, 8, 1, 1), 8)},
    )
    return model, {"x": rand((2, 8, 3, 3), 9)}


@case("clip")
def _():
    model = onnx_model(
        [node("Clip", ["x", "lo", "hi"], ["y"])],
        {"x": (10,)},
        {"y": (10,)},
        {"lo": np.array(-0.5, np.float32), "hi": np.array(0.25, np.float32)},
    )
    return model, {"x": rand((10,), 10)}


def _matmul(a_shape, b_shape, out_shape):
    def make():
        model = onnx_model(
            [node("MatMul", ["a", "b"], ["y"])], {"a": a_shape, "b": b_shape}, {"y": out_shape}
        )
        return model, {"a": rand(a_shape, 11), "b": rand(b_shape, 12)}

    return make


CASES["matmul_2d"] = _matmul((37, 19), (19, 23), (37, 23))
CASES["matmul_batched"] = _matmul((3, 2, 17, 8), (3, 2, 8, 9), (3, 2, 17, 9))
CASES["matmul_broadcast_b"] = _matmul((4, 17, 8), (8, 9), (4, 17, 9))
CASES["matmul_broadcast_both"] = _matmul((2, 1, 5, 8), (1, 3, 8, 6), (2, 3, 5, 6))
CASES["matmul_vector"] = _matmul((8,), (3, 8, 6), (3, 6))


def _gemm(trans_a, trans_b, c_shape, alpha=1.0, beta=1.0):
    def make():
        a_shape = (9, 13) if trans_a else (13, 9)
        b_shape = (11, 9) if trans_b else (9, 11)
        inits = {"c": rand(c_shape, 13)} if c_shape else {}
        model = onnx_model(
            [
                node(
                    "Gemm",
                    ["a", "b"] + (["c"] if c_shape else []),
                    ["y"],
                    transA=trans_a,
                    transB=trans_b,
                    alpha=alpha,
                    beta=beta,
                )
            ],
            {"a": a_shape, "b": b_shape},
            {"y": (13, 11)},
            inits,
        )
        return model, {"a": rand(a_shape, 14), "b": rand(b_shape, 15)}

    return make


CASES["gemm_plain"] = _gemm(0, 0, None)
CASES["gemm_transposes_bias"] = _gemm(1, 1, (11,), alpha=0.5, beta=2.0)
CASES["gemm_matrix_bias"] = _gemm(0, 1, (13, 11))
CASES["gemm_row_bias_epilogue"] = _gemm(0, 1, (1, 11), alpha=1.5)  # beta 1: the epilogue


@case("linear_bias_no_relu")
def _():
    # [3, 5, 16] @ [16, 24] + bias[24]: one Gemm step over 15 rows with the bias epilogue
    model = onnx_model(
        [node("MatMul", ["x", "w"], ["h"]), node("Add", ["b", "h"], ["y"])],
        {"x": (3, 5, 16)},
        {"y": (3, 5, 24)},
        {"w": rand((16, 24), 43), "b": rand((1, 1, 24), 44)},
    )
    return model, {"x": rand((3, 5, 16), 45)}


def _conv(x_shape, w_shape, y_shape, bias=True, **attrs):
    def make():
        inits = {"w": rand(w_shape, 16)}
        inputs = ["x", "w"]
        if bias:
            inits["b"] = rand((w_shape[0],), 17)
            inputs.append("b")
        model = onnx_model(
            [node("Conv", inputs, ["y"], **attrs)], {"x": x_shape}, {"y": y_shape}, inits
        )
        return model, {"x": rand(x_shape, 18)}

    return make


CASES["conv_3x3_pad"] = _conv((2, 3, 9, 9), (8, 3, 3, 3), (2, 8, 9, 9), pads=[1, 1, 1, 1])
CASES["conv_stride_dilation"] = _conv(
    (1, 4, 13, 11), (6, 4, 3, 3), (1, 6, 5, 4), strides=[2, 2], dilations=[2, 2], pads=[1, 0, 1, 0]
)
CASES["conv_1x1"] = _conv((2, 16, 5, 5), (8, 16, 1, 1), (2, 8, 5, 5), bias=False)
CASES["conv_grouped"] = _conv(
    (1, 8, 7, 7), (12, 4, 3, 3), (1, 12, 7, 7), group=2, pads=[1, 1, 1, 1]
)
CASES["conv_depthwise"] = _conv(
    (2, 6, 8, 8), (6, 1, 3, 3), (2, 6, 4, 4), group=6, strides=[2, 2], auto_pad="SAME_UPPER"
)
CASES["conv_1d"] = _conv((2, 3, 20), (5, 3, 4), (2, 5, 17))


def _pool(op, y_shape, **attrs):
    def make():
        model = onnx_model([node(op, ["x"], ["y"], **attrs)], {"x": (2, 3, 10, 9)}, {"y": y_shape})
        return model, {"x": rand((2, 3, 10, 9), 19)}

    return make


CASES["maxpool_3x3_s2_pad"] = _pool(
    "MaxPool", (2, 3, 5, 5), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]
)
CASES["avgpool_exclude_pad"] = _pool(
    "AveragePool", (2, 3, 5, 5), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]
)
CASES["avgpool_include_pad_ceil"] = _pool(
    "AveragePool",
    (2, 3, 6, 5),
    kernel_shape=[2, 3],
    strides=[2, 2],
    pads=[1, 1, 1, 1],
    count_include_pad=1,
    ceil_mode=1,
)
CASES["global_avgpool"] = _pool("GlobalAveragePool", (2, 3, 1, 1))


def _integer_maxpool(dtype, low, high):
    """MaxPool on a quantized CNN's codes (u8 / i8, as QOperator models keep it)."""

    def make():
        attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
        model = onnx_model(
            [node("MaxPool", ["x"], ["y"], **attrs)],
            {"x": (2, 3, 10, 9)},
            {"y": (2, 3, 5, 5)},
            dtypes={"x": dtype, "y": dtype},
        )
        return model, {"x": rand((2, 3, 10, 9), 23, dtype, low, high)}

    return make


CASES["maxpool_u8"] = _integer_maxpool(np.uint8, 0, 256)
CASES["maxpool_i8"] = _integer_maxpool(np.int8, -128, 128)
CASES["global_maxpool"] = _pool("GlobalMaxPool", (2, 3, 1, 1))


def _reduce(op, axes, keepdims, out_shape):
    def make():
        model = onnx_model(
            [node(op, ["x", "axes"], ["y"], keepdims=keepdims)],
            {"x": (3, 4, 70)},
            {"y": out_shape},
            {"axes": np.array(axes, np.int64)},
        )
        return model, {"x": rand((3, 4, 70), 20, low=0.1, high=1.0)}

    return make


CASES["reduce_mean_last"] = _reduce("ReduceMean", [-1], 1, (3, 4, 1))
CASES["reduce_sum_middle"] = _reduce("ReduceSum", [1], 0, (3, 70))
CASES["reduce_max_two"] = _reduce("ReduceMax", [1, 2], 0, (3,))
CASES["reduce_l2"] = _reduce("ReduceL2", [2], 1, (3, 4, 1))
CASES["reduce_logsumexp"] = _reduce("ReduceLogSumExp", [0], 0, (4, 70))


def _softmax(op, axis):
    def make():
        model = onnx_model(
            [node(op, ["x"], ["y"], axis=axis)], {"x": (2, 5, 300)}, {"y": (2, 5, 300)}
        )
        return model, {"x": rand((2, 5, 300), 21, low=-5, high=5)}

    return make


CASES["softmax_last"] = _softmax("Softmax", -1)
CASES["softmax_middle"] = _softmax("Softmax", 1)
CASES["logsoftmax_last"] = _softmax("LogSoftmax", -1)


@case("layernorm")
def _():
    model = onnx_model(
        [node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1, epsilon=1e-5)],
        {"x": (2, 7, 48)},
        {"y": (2, 7, 48)},
        {"s": rand((48,), 22), "b": rand((48,), 23)},
    )
    return model, {"x": rand((2, 7, 48), 24, low=-3, high=3)}


@case("layernorm_wide_rows")
def _():
    # 1000 floats: 16-byte pieces, 8 a lane on the device, some lanes without a last one
    model = onnx_model(
        [node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1)],
        {"x": (6, 1000)},
        {"y": (6, 1000)},
        {"s": rand((1000,), 27), "b": rand((1000,), 28)},
    )
    return model, {"x": rand((6, 1000), 29, low=-3, high=3)}


@case("residual_layernorm")
def _():
    # x @ w + r then LayerNormalization (a transformer's residual block end): one step
    model = onnx_model(
        [
            node("MatMul", ["x", "w"], ["h"]),
            node("Add", ["h", "r"], ["s"]),
            node("LayerNormalization", ["s", "g", "b"], ["y"], axis=-1),
        ],
        {"x": (2, 5, 16), "r": (2, 5, 96)},
        {"y": (2, 5, 96)},
        {"w": rand((16, 96), 30), "g": rand((96,), 31), "b": rand((96,), 32)},
    )
    return model, {"x": rand((2, 5, 16), 33), "r": rand((2, 5, 96), 34, low=-2, high=2)}


@case("projection_bias_residual_layernorm")
def _():
    # x @ w + bias + z @ v, LayerNormalization (BERT's output projection, the residual computed
    # in the graph as there): the bias joins the Gemm (passes/fuse_matmul_bias.py), the
    # residual the normalization
    model = onnx_model(
        [
            node("MatMul", ["x", "w"], ["h"]),
            node("Add", ["bias", "h"], ["hb"]),
            node("MatMul", ["z", "v"], ["r"]),
            node("Add", ["hb", "r"], ["s"]),
            node("LayerNormalization", ["s", "g", "b"], ["y"], axis=-1),
        ],
        {"x": (3, 7, 24), "z": (3, 7, 8)},
        {"y": (3, 7, 40)},
        {
            "w": rand((24, 40), 50),
            "bias": rand((40,), 51),
            "v": rand((8, 40), 62),
            "g": rand((40,), 52),
            "b": rand((40,), 53),
        },
    )
    return model, {"x": rand((3, 7, 24), 54), "z": rand((3, 7, 8), 55, low=-2, high=2)}


@case("projection_bias_read_twice")
def _():
    # the same block with the biased product also an output (fuse_matmul_bias leaves it)
    model = onnx_model(
        [
            node("MatMul", ["x", "w"], ["h"]),
            node("Add", ["h", "bias"], ["hb"]),
            node("Add", ["hb", "r"], ["s"]),
            node("LayerNormalization", ["s", "g", "b"], ["y"], axis=-1),
        ],
        {"x": (2, 5, 16), "r": (2, 5, 32)},
        {"y": (2, 5, 32), "hb": (2, 5, 32)},
        {
            "w": rand((16, 32), 56),
            "bias": rand((32,), 57),
            "g": rand((32,), 58),
            "b": rand((32,), 59),
        },
    )
    return model, {"x": rand((2, 5, 16), 60), "r": rand((2, 5, 32), 61)}


@case("instancenorm_2d")
def _():
    # InstanceNormalization (lower_norm.py): N * C rows normalized, then scale / bias per channel
    model = onnx_model(
        [node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)],
        {"x": (2, 3, 5, 7)},
        {"y": (2, 3, 5, 7)},
        {"s": rand((3,), 40), "b": rand((3,), 41)},
    )
    return model, {"x": rand((2, 3, 5, 7), 42, low=-3, high=3)}


@case("instancenorm_1d_long_rows")
def _():
    # a wav2vec2-style feature extractor's [N, C, L] with C = 4 channels of 1500 samples
    model = onnx_model(
        [node("InstanceNormalization", ["x", "s", "b"], ["y"])],
        {"x": (1, 4, 1500)},
        {"y": (1, 4, 1500)},
        {"s": rand((4,), 43), "b": rand((4,), 44)},
    )
    return model, {"x": rand((1, 4, 1500), 45, low=-3, high=3) + 2.0}


@case("groupnorm_2d")
def _():
    model = onnx_model(
        [node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3, epsilon=1e-4)],
        {"x": (2, 6, 4, 5)},
        {"y": (2, 6, 4, 5)},
        {"s": rand((6,), 46), "b": rand((6,), 47)},
    )
    return model, {"x": rand((2, 6, 4, 5), 48, low=-3, high=3)}


@case("groupnorm_one_group_runtime_params")
def _():
    # scale and bias as graph inputs (not constants), all channels in one group
    model = onnx_model(
        [node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=1)],
        {"x": (3, 4, 6), "s": (4,), "b": (4,)},
        {"y": (3, 4, 6)},
    )
    feeds = {"x": rand((3, 4, 6), 49, low=-3, high=3), "s": rand((4,), 50), "b": rand((4,), 51)}
    return model, feeds


@case("layernorm_two_axes_no_bias")
def _():
    model = onnx_model(
        [node("LayerNormalization", ["x", "s"], ["y"], axis=1)],
        {"x": (3, 4, 5)},
        {"y": (3, 4, 5)},
        {"s": rand((4, 5), 25)},
    )
    return model, {"x": rand((3, 4, 5), 26)}


def _attention(q_shape, k_shape, v_shape, y_shape, mask_shape=None, mask_dtype=np.float32, **attrs):
    def make():
        inputs = {"q": q_shape, "k": k_shape, "v": v_shape}
        names = ["q", "k", "v"]
        dtypes = {}
        if mask_shape:
            inputs["m"] = mask_shape
            names.append("m")
            dtypes["m"] = mask_dtype
        model = onnx_model(
            [node("Attention", names, ["y"], **attrs)],
            inputs,
            {"y": y_shape},
            opset=23,
            dtypes=dtypes,
        )
        feeds = {"q": rand(q_shape, 27), "k": rand(k_shape, 28), "v": rand(v_shape, 29)}
        if mask_shape:
            feeds["m"] = (
                rand(mask_shape, 30, dtype=np.bool_)
                if mask_dtype == np.bool_
                else rand(mask_shape, 30)
            )
            if mask_dtype == np.bool_:
                feeds["m"][..., 0] = True
        return model, feeds

    return make


CASES["attention_4d"] = _attention((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6), (2, 3, 5, 6))
CASES["attention_3d_heads"] = _attention(
    (2, 5, 16), (2, 7, 16), (2, 7, 12), (2, 5, 12), q_num_heads=4, kv_num_heads=4
)
CASES["attention_float_mask"] = _attention(
    (1, 2, 6, 8), (1, 2, 6, 8), (1, 2, 6, 8), (1, 2, 6, 8), (6, 6), scale=0.3
)
CASES["attention_bool_mask"] = _attention(
    (2, 2, 4, 8), (2, 2, 6, 8), (2, 2, 6, 8), (2, 2, 4, 8), (2, 1, 4, 6), np.bool_
)
CASES["attention_causal"] = _attention(
    (1, 2, 6, 8), (1, 2, 6, 8), (1, 2, 6, 8), (1, 2, 6, 8), is_causal=1
)


@case("transpose")
def _():
    model = onnx_model(
        [node("Transpose", ["x"], ["y"], perm=[2, 0, 3, 1])],
        {"x": (2, 3, 4, 5)},
        {"y": (4, 2, 5, 3)},
    )
    return model, {"x": rand((2, 3, 4, 5), 31)}


def _transpose(shape, perm, dtype=np.float32, seed=35):
    """Transpose of a `dtype` input: where the input's last dim and the output's contiguous
    dim differ and both are 8 or more long, the gpu copy goes through shared-memory tiles
    (src/gpu/copy.hip); sizes that fill no 32-wide tile."""

    def make():
        out = tuple(shape[p] for p in perm)
        model = onnx_model(
            [node("Transpose", ["x"], ["y"], perm=list(perm))],
            {"x": shape},
            {"y": out},
            dtypes={"x": dtype, "y": dtype},
        )
        return model, {"x": rand(shape, seed, dtype, -100, 100)}

    return make


CASES["transpose_tiled_last_two"] = _transpose((3, 70, 45), (0, 2, 1))
CASES["transpose_tiled_nchw_to_nhwc"] = _transpose((2, 40, 9, 11), (0, 2, 3, 1), np.float16)
CASES["transpose_tiled_nhwc_to_nchw"] = _transpose((2, 9, 11, 40), (0, 3, 1, 2))
CASES["transpose_tiled_int64"] = _transpose((33, 17), (1, 0), np.int64)
CASES["transpose_tiled_bool_outer"] = _transpose((9, 20, 24), (2, 1, 0), np.bool_)
CASES["transpose_untiled_short_dim"] = _transpose((5, 3, 40), (0, 2, 1))


@case("concat")
def _():
    model = onnx_model(
        [node("Concat", ["a", "b", "c"], ["y"], axis=1)],
        {"a": (2, 3, 4), "b": (2, 1, 4), "c": (2, 5, 4)},
        {"y": (2, 9, 4)},
    )
    return model, {"a": rand((2, 3, 4), 32), "b": rand((2, 1, 4), 33), "c": rand((2, 5, 4), 34)}


@case("split")
def _():
    model = onnx_model(
        [node("Split", ["x", "s"], ["a", "b"], axis=-1)],
        {"x": (3, 10)},
        {"a": (3, 4), "b": (3, 6)},
        {"s": np.array([4, 6], np.int64)},
    )
    return model, {"x": rand((3, 10), 35)}


@case("slice_steps")
def _():
    inits = {
        "st": np.array([1, -1], np.int64),
        "en": np.array([9, -100], np.int64),
        "ax": np.array([0, 2], np.int64),
        "sp": np.array([3, -2], np.int64),
    }
    model = onnx_model(
        [node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])],
        {"x": (10, 3, 7)},
        {"y": (3, 3, 4)},
        inits,
    )
    return model, {"x": rand((10, 3, 7), 36)}


@case("expand")
def _():
    model = onnx_model(
        [node("Expand", ["x", "s"], ["y"])],
        {"x": (3, 1)},
        {"y": (2, 3, 4)},
        {"s": np.array([2, 3, 4], np.int64)},
    )
    return model, {"x": rand((3, 1), 37)}


@case("gather_negative")
def _():
    model = onnx_model(
        [node("Gather", ["x", "i"], ["y"], axis=1)],
        {"x": (3, 5, 2)},
        {"y": (3, 2, 2, 2)},
        {"i": np.array([[0, -1], [4, 2]], np.int64)},
    )
    return model, {"x": rand((3, 5, 2), 38)}


@case("gather_embedding_int64_data")
def _():
    model = onnx_model(
        [node("Gather", ["w", "i"], ["y"], axis=0)],
        {"i": (2, 3)},
        {"y": (2, 3, 4)},
        {"w": np.arange(40, dtype=np.int64).reshape(10, 4)},
        dtypes={"i": np.int64, "y": np.int64},
    )
    return model, {"i": np.array([[1, 2, 9], [0, 0, 5]], np.int64)}


@case("mlp_block")
def _():
    nodes = [
        node("MatMul", ["x", "w1"], ["h"]),
        node("Add", ["h", "b1"], ["hb"]),
        node("Relu", ["hb"], ["r"]),
        node("MatMul", ["r", "w2"], ["o"]),
        node("Add", ["o", "x"], ["y"]),
    ]
    model = onnx_model(
        nodes,
        {"x": (2, 4, 16)},
        {"y": (2, 4, 16)},
        {"w1": rand((16, 32), 39), "b1": rand((32,), 40), "w2": rand((32, 16), 41)},
    )
    return model, {"x": rand((2, 4, 16), 42)}


@case("conv_bn_relu_pool")
def _():
    nodes = [
        node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        node("BatchNormalization", ["c", "g", "b", "m", "v"], ["n"]),
        node("Relu", ["n"], ["r"]),
        node("GlobalAveragePool", ["r"], ["p"]),
        node("Flatten", ["p"], ["y"]),
    ]
    model = onnx_model(
        nodes,
        {"x": (2, 3, 8, 8)},
        {"y": (2, 6)},
        {
            "w": rand((6, 3, 3, 3), 43),
            "g": rand((6,), 44, low=0.5, high=1.5),
            "b": rand((6,), 45),
            "m": rand((6,), 46),
            "v": rand((6,), 47, low=0.5, high=1.5),
        },
    )
    return model, {"x": rand((2, 3, 8, 8), 48)}


@case("layernorm_with_stats")
def _():
    model = onnx_model(
        [node("LayerNormalization", ["x", "s"], ["y", "m", "r"], axis=-1)],
        {"x": (3, 40)},
        {"y": (3, 40), "m": (3, 1), "r": (3, 1)},
        {"s": rand((40,), 50)},
    )
    return model, {"x": rand((3, 40), 51)}


@case("rms_norm")
def _():
    model = onnx_model(
        [node("RMSNormalization", ["x", "s"], ["y"], axis=-1)],
        {"x": (2, 5, 64)},
        {"y": (2, 5, 64)},
        {"s": rand((64,), 52)},
        opset=23,
    )
    return model, {"x": rand((2, 5, 64), 53)}


@case("argmax_last_index")
def _():
    model = onnx_model(
        [node("ArgMax", ["x"], ["y"], axis=1, keepdims=1, select_last_index=1)],
        {"x": (3, 6, 4)},
        {"y": (3, 1, 4)},
        dtypes={"y": np.int64},
    )
    x = np.round(rand((3, 6, 4), 54) * 2) / 2  # ties
    return model, {"x": x.astype(np.float32)}


@case("argmin")
def _():
    model = onnx_model(
        [node("ArgMin", ["x"], ["y"], axis=-1, keepdims=0)],
        {"x": (3, 6, 4)},
        {"y": (3, 6)},
        dtypes={"y": np.int64},
    )
    return model, {"x": rand((3, 6, 4), 55)}


@case("gather_elements")
def _():
    model = onnx_model(
        [node("GatherElements", ["x", "i"], ["y"], axis=1)],
        {"x": (3, 5), "i": (3, 4)},
        {"y": (3, 4)},
        dtypes={"i": np.int64},
    )
    return model, {"x": rand((3, 5), 56), "i": np.array([[0, 4, -1, 2]] * 3, np.int64)}


@case("trilu_lower_k")
def _():
    model = onnx_model(
        [node("Trilu", ["x", "k"], ["y"], upper=0)],
        {"x": (2, 4, 5)},
        {"y": (2, 4, 5)},
        {"k": np.array(1, np.int64)},
    )
    return model, {"x": rand((2, 4, 5), 57)}


@case("pad_constant_crop")
def _():
    model = onnx_model(
        [node("Pad", ["x", "p", "v"], ["y"])],
        {"x": (3, 4)},
        {"y": (5, 3)},
        {"p": np.array([1, 0, 1, -1], np.int64), "v": np.array(2.5, np.float32)},
    )
    return model, {"x": rand((3, 4), 58)}


@case("castlike")
def _():
    model = onnx_model(
        [node("CastLike", ["x", "t"], ["y"])],
        {"x": (4, 3)},
        {"y": (4, 3)},
        {"t": np.zeros((1,), np.float16)},
        dtypes={"y": np.float16},
    )
    return model, {"x": rand((4, 3), 59, low=-100, high=100)}


@case("reduce_runtime_axes")
def _():
    model = onnx_model(
        [node("ReduceSum", ["x", "axes"], ["y"], keepdims=1)],
        {"x": (3, 4, 5), "axes": (1,)},
        {"y": (3, 1, 5)},
        dtypes={"axes": np.int64},
    )
    return model, {"x": rand((3, 4, 5), 60), "axes": np.array([1], np.int64)}


@case("reshape_runtime_shape")
def _():
    model = onnx_model(
        [node("Reshape", ["x", "s"], ["r"]), node("Relu", ["r"], ["y"])],
        {"x": (3, 4, 5), "s": (2,)},
        {"y": (12, 5)},
        dtypes={"s": np.int64},
    )
    return model, {"x": rand((3, 4, 5), 61), "s": np.array([-1, 5], np.int64)}


CASES["attention_gqa_softcap"] = _attention(
    (1, 4, 5, 8), (1, 2, 7, 8), (1, 2, 7, 8), (1, 4, 5, 8), softcap=2.0
)
CASES["attention_3d_gqa_causal"] = _attention(
    (2, 6, 24), (2, 6, 8), (2, 6, 8), (2, 6, 24), q_num_heads=6, kv_num_heads=2, is_causal=1
)


@case("attention_past_present_qk")
def _():
    shapes = {
        "q": (1, 2, 3, 8),
        "k": (1, 2, 3, 8),
        "v": (1, 2, 3, 8),
        "pk": (1, 2, 4, 8),
        "pv": (1, 2, 4, 8),
    }
    outs = {"y": (1, 2, 3, 8), "k2": (1, 2, 7, 8), "v2": (1, 2, 7, 8), "qk": (1, 2, 3, 7)}
    model = onnx_model(
        [
            node(
                "Attention",
                ["q", "k", "v", "", "pk", "pv"],
                ["y", "k2", "v2", "qk"],
                is_causal=1,
                qk_matmul_output_mode=3,
            )
        ],
        shapes,
        outs,
        opset=23,
    )
    return model, {n: rand(s, 62 + i) for i, (n, s) in enumerate(shapes.items())}


@case("scalar_inputs")
def _():
    model = onnx_model(
        [node("Clip", ["x", "lo", "hi"], ["y"])], {"x": (6,), "lo": (), "hi": ()}, {"y": (6,)}
    )
    return model, {
        "x": rand((6,), 70),
        "lo": np.array(-0.2, np.float32),
        "hi": np.array(0.3, np.float32),
    }
