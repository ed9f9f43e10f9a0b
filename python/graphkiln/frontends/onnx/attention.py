# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of attention blocks: Attention, RotaryEmbedding, LinearAttention, SwiGLU."""

# ONNX op name -> (first opset handled, converter or None for a one-to-one copy).
# Attention-23 lacks nonpad_kv_seqlen (24) and the window attributes (25); absent, they
# mean what opset 23 does, so a copy brings every opset to the IR form.
OPS = {
    "Attention": (23, None),
    "RotaryEmbedding": (23, None),
    "LinearAttention": (27, None),
    "SwiGLU": (28, None),
}
