# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernel of MatMulNBits (onnxruntime's com.microsoft block-quantized weight-only
MatMul), the oracle of the cpu kernel src/cpu/matmul_nbits.cpp.

Y = A @ W^T (+ bias), W [N, K] float: for row n and k in block j = k // block_size,
W[n, k] = (q[n, k] - zero[n, j]) * scales[n * k_blocks + j].
  q: B [N, k_blocks, blob_size], blob_size = block_size * bits / 8; each block's codes are
     stored low bits first: with 4 bits, byte i holds code 2i in its low nibble and code
     2i + 1 in its high nibble. K need not be a multiple of block_size: the last block is
     padded and its codes past K are unused.
  zero: absent -> 2^(bits - 1) (8 for 4 bits, 128 for 8 bits); uint8 -> packed like the
     codes, each row of N on its own ceil(k_blocks * bits / 8) bytes; float -> one per block,
     [N * k_blocks], subtracted as a float."""

import numpy as np


def unpack_codes(packed: np.ndarray, bits: int, count: int) -> np.ndarray:
    """The first `count` codes of each row of `packed` (uint8 [rows, bytes]), low bits first."""
    packed = np.asarray(packed, np.uint8)
    per_byte = 8 // bits
    shifts = np.arange(per_byte, dtype=np.uint8) * bits
    mask = np.uint8((1 << bits) - 1)
    codes = (packed[..., None] >> shifts) & mask
    return codes.reshape(packed.shape[0], -1)[:, :count]


def dequantized_weight(b, scales, zero_points, *, K, N, bits, block_size) -> np.ndarray:
    """W [N, K] float64 from the packed inputs."""
    k_blocks = (K + block_size - 1) // block_size
    codes = unpack_codes(np.asarray(b).reshape(N, -1), bits, k_blocks * block_size)
    codes = codes.reshape(N, k_blocks, block_size).astype(np.float64)
    scale = np.asarray(scales, np.float64).reshape(N, k_blocks, 1)
    if zero_points is None:
        zero = np.full((N, k_blocks, 1), float(1 << (bits - 1)))
    elif np.asarray(zero_points).dtype == np.uint8:
        zero = unpack_codes(np.asarray(zero_points).reshape(N, -1), bits, k_blocks)
        zero = zero.reshape(N, k_blocks, 1).astype(np.float64)
    else:
        zero = np.asarray(zero_points, np.float64).reshape(N, k_blocks, 1)
    weight = (codes - zero) * scale
    return weight.reshape(N, k_blocks * block_size)[:, :K]


def MatMulNBits(a, b, scales, zero_points=None, bias=None, *, K, N, bits, block_size):
    weight = dequantized_weight(b, scales, zero_points, K=K, N=N, bits=bits, block_size=block_size)
    y = np.matmul(a.astype(np.float64), weight.T)
    if bias is not None:
        y = y + bias.astype(np.float64)
    return y.astype(a.dtype)
