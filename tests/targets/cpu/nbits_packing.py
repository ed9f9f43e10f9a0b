# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A small numpy packer of MatMulNBits weights for the tests: a float [N, K] matrix
quantized per block of K to `bits`-bit codes, packed as com.microsoft MatMulNBits reads them
(codes low bits first, each row's zero points packed on their own bytes)."""

import numpy as np


def pack_rows(codes: np.ndarray, bits: int) -> np.ndarray:
    """uint8 codes [rows, count] -> uint8 [rows, ceil(count * bits / 8)], low bits first."""
    per_byte = 8 // bits
    rows, count = codes.shape
    padded = np.zeros((rows, -(-count // per_byte) * per_byte), np.uint8)
    padded[:, :count] = codes
    groups = padded.reshape(rows, -1, per_byte).astype(np.uint16)
    shifts = (np.arange(per_byte) * bits).astype(np.uint16)
    return (groups << shifts).sum(axis=-1).astype(np.uint8)


def quantize_weight(w: np.ndarray, bits: int, block_size: int, zero_kind: str, seed: int = 0):
    """(B, scales, zero_points or None) for float `w` [N, K]. zero_kind: "none" (symmetric
    around 2^(bits-1)), "packed" (uint8, asymmetric per block) or "float" (float32)."""
    n, k = w.shape
    k_blocks = -(-k // block_size)
    top = (1 << bits) - 1
    padded = np.zeros((n, k_blocks * block_size), np.float64)
    padded[:, :k] = w
    blocks = padded.reshape(n, k_blocks, block_size)
    if zero_kind == "none":
        zero = np.full((n, k_blocks), float(1 << (bits - 1)))
        scale = np.max(np.abs(blocks), axis=-1) / (1 << (bits - 1))
    else:
        low, high = np.min(blocks, axis=-1), np.max(blocks, axis=-1)
        scale = (high - low) / top
        zero = np.clip(np.rint(-low / np.where(scale > 0, scale, 1)), 0, top)
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    q = np.clip(np.rint(blocks / scale[..., None] + zero[..., None]), 0, top).astype(np.uint8)
    # the padding past K: random codes, which the kernels must ignore
    rng = np.random.default_rng(seed)
    q.reshape(n, -1)[:, k:] = rng.integers(0, top + 1, size=(n, k_blocks * block_size - k))
    b = pack_rows(q.reshape(n * k_blocks, block_size), bits).reshape(n, k_blocks, -1)
    scales = scale.reshape(-1)
    if zero_kind == "none":
        return b, scales, None
    if zero_kind == "packed":
        return b, scales, pack_rows(zero.astype(np.uint8), bits).reshape(-1)
    # a float zero point need not be an integer
    return b, scales, (zero + rng.uniform(-0.3, 0.3, zero.shape)).astype(np.float32).reshape(-1)
