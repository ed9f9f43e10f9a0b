# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy version of com.microsoft MatMulNBits, from the ContribOperators documentation, for
test_microsoft_ops.py (EXPECTED_NBITS: case of microsoft_nbits_models.py -> function of
feeds, initializers, attributes). Written per code, not vectorized, to differ from the ref
kernel: code k of row n is bits [pos, pos + bits) of B's row n, pos = k_block * blob * 8 +
(k % block_size) * bits, low bits first; zero points packed alike per row (default
2^(bits-1)); W[n, k] = (code - zero) * scale; Y = A @ W^T + bias."""

from __future__ import annotations

import numpy as np


def _field(row: np.ndarray, pos: int, bits: int) -> np.ndarray:
    return ((row[:, pos // 8] >> (pos % 8)) & ((1 << bits) - 1)).astype(np.float64)


def matmul_nbits(feeds, consts, attrs):
    k, n, bits, block = attrs["K"], attrs["N"], attrs.get("bits", 4), attrs["block_size"]
    k_blocks = -(-k // block)
    b = consts["B"].reshape(n, -1)
    scales = consts["scales"].reshape(n, k_blocks).astype(np.float64)
    zero = consts.get("zp")
    weight = np.zeros((n, k))
    for col in range(k):
        j = col // block
        code = _field(b, j * block * bits + (col % block) * bits, bits)
        if zero is None:
            zp = float(1 << (bits - 1))
        elif zero.dtype == np.uint8:
            zp = _field(zero.reshape(n, -1), j * bits, bits)
        else:
            zp = zero.reshape(n, k_blocks)[:, j].astype(np.float64)
        weight[:, col] = (code - zp) * scales[:, j]
    y = feeds["a"].astype(np.float64) @ weight.T
    if "bias" in consts:
        y = y + consts["bias"]
    return [y]


EXPECTED_NBITS = {
    name: matmul_nbits
    for name in (
        "matmul_nbits_4bit",
        "matmul_nbits_4bit_zp_bias",
        "matmul_nbits_4bit_float_zp",
        "matmul_nbits_4bit_odd_blocks",
        "matmul_nbits_8bit",
        "matmul_nbits_8bit_zp",
    )
}
