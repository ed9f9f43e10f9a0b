# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""MatMulNBits (com.microsoft, weight-only int4 / int8) on cpu against ref, and ref against
a plain numpy dequantize-then-matmul of the float weight the packer quantized."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import graphkiln as gk

from cpu_testing import check_cpu, rand
from nbits_packing import quantize_weight


def _model(a_shape, n, k, bits, block_size, b, scales, zero, bias):
    inits = {"B": b, "scales": scales}
    names = ["A", "B", "scales", "", "", ""]
    if zero is not None:
        inits["zp"], names[3] = zero, "zp"
    if bias is not None:
        inits["bias"], names[5] = bias, "bias"
    while names[-1] == "":
        names.pop()
    node = helper.make_node(
        "MatMulNBits", names, ["Y"], domain="com.microsoft",
        K=k, N=n, bits=bits, block_size=block_size, accuracy_level=4,
    )  # fmt: skip
    graph = helper.make_graph(
        [node],
        "nbits",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, a_shape)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(a_shape[:-1]) + [n])],
        [numpy_helper.from_array(v, name) for name, v in inits.items()],
    )
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets).SerializeToString()


def _dequantized(b, scales, zero, n, k, bits, block_size):
    """W [N, K] by a loop over the codes, independent of the ref kernel's vector code."""
    k_blocks = -(-k // block_size)
    w = np.zeros((n, k))
    flat = b.reshape(n, -1)
    for col in range(k):
        j = col // block_size
        pos = j * block_size * bits // 8 * 8 + (col % block_size) * bits
        code = (flat[:, pos // 8] >> (pos % 8)) & ((1 << bits) - 1)
        if zero is None:
            zp = 2.0 ** (bits - 1)
        elif zero.dtype == np.uint8:
            row_bytes = -(-k_blocks * bits // 8)
            zbits = j * bits
            zp = (zero.reshape(n, row_bytes)[:, zbits // 8] >> (zbits % 8)) & ((1 << bits) - 1)
        else:
            zp = zero.reshape(n, k_blocks)[:, j]
        w[:, col] = (code.astype(np.float64) - zp) * scales.reshape(n, k_blocks)[:, j]
    return w


CASES = [
    # bits, block_size, a_shape, n, zero kind, bias
    (4, 16, (3, 32), 5, "none", False),
    (4, 32, (2, 4, 45), 7, "packed", True),
    (4, 64, (5, 100), 9, "float", False),
    (4, 128, (2, 130), 3, "packed", False),
    (8, 16, (4, 33), 6, "packed", True),
    (8, 32, (3, 2, 64), 5, "none", True),
    (8, 64, (1, 70), 11, "float", True),
    (8, 128, (6, 129), 4, "none", False),
    (4, 16, (7, 17), 13, "packed", True),  # k_blocks = 2: odd zero-point nibbles per row
    (4, 32, (2, 200), 33, "packed", False),  # k_blocks = 7: a padded zero-point byte per row
]


@pytest.mark.parametrize("bits,block_size,a_shape,n,zero_kind,with_bias", CASES)
def test_matmul_nbits(bits, block_size, a_shape, n, zero_kind, with_bias):
    k = a_shape[-1]
    seed = bits * 1000 + block_size + n
    w = rand((n, k), seed=seed)
    b, scales, zero = quantize_weight(w, bits, block_size, zero_kind, seed=seed)
    bias = rand((n,), seed=seed + 1) if with_bias else None
    a = rand(a_shape, seed=seed + 2)
    model = _model(a_shape, n, k, bits, block_size, b, scales, zero, bias)
    cpu = check_cpu(model, {"A": a}, rtol=1e-4, atol=1e-5)[0]
    expected = a.astype(np.float64) @ _dequantized(b, scales, zero, n, k, bits, block_size).T
    if bias is not None:
        expected = expected + bias
    np.testing.assert_allclose(cpu, expected, rtol=1e-4, atol=1e-4)
    # the quantized weight is near the float one: the packer and the format agree
    approx = a.astype(np.float64) @ w.T.astype(np.float64) + (0 if bias is None else bias)
    tolerance = 0.6 if bits == 4 else 0.05
    assert np.max(np.abs(expected - approx)) < tolerance * np.sqrt(k)


def test_matmul_nbits_refuses_two_bits():
    b, scales, _ = quantize_weight(rand((4, 32)), 4, 32, "none")
    model = _model((2, 32), 4, 32, 2, 32, b[:, :, :8], scales, None, None)
    with pytest.raises(gk.UnsupportedOperatorError, match="bits=2"):
        gk.parse_onnx_buffer(model)
