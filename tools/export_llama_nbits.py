# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A tiny Llama-style decoder (transformers' LlamaForCausalLM: RMSNorm, rotary attention
with grouped key / value heads, SwiGLU MLP; 2 layers, hidden 64, seeded weights) exported
to ONNX, its MatMul weights quantized to int4 by onnxruntime's own MatMulNBitsQuantizer
(block size 32, asymmetric: packed zero points), and onnxruntime's logits recorded:

- tests/frontends/data/llama_tiny_int4.onnx, llama_tiny_int4.npz (keys "input:input_ids",
  "output:logits"), for tests/frontends/test_quantized_models.py.

Runs in the export venv (torch, transformers, onnx, onnxruntime: benchmarks/
requirements-export.txt):
    /work/venv-export/bin/python tools/export_llama_nbits.py
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "frontends", "data")
SEQUENCE = 12
VOCAB = 256


def export_float(path: str) -> None:
    import torch
    import transformers as tf

    torch.manual_seed(0)
    config = tf.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        use_cache=False,
    )
    model = tf.LlamaForCausalLM(config).eval()

    class Logits(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids):
            return self.inner(input_ids=input_ids, use_cache=False, return_dict=True).logits

    ids = torch.zeros((1, SEQUENCE), dtype=torch.int64)
    # the dynamo exporter: the legacy one lacks aten::diff (transformers' mask creation)
    torch.onnx.export(
        Logits(model),
        (ids,),
        path,
        input_names=["input_ids"],
        output_names=["logits"],
        opset_version=18,
        dynamo=True,
        external_data=False,
    )


def main() -> None:
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "llama_tiny.onnx")
        export_float(source)
        quantizer = MatMulNBitsQuantizer(
            onnx.load(source), block_size=32, is_symmetric=False, bits=4
        )
        quantizer.process()
        path = os.path.join(DATA, "llama_tiny_int4.onnx")
        quantizer.model.save_model_to_file(path, use_external_data_format=False)
    model = onnx.load(path)
    ops = sorted({n.op_type for n in model.graph.node})
    nbits = sum(n.op_type == "MatMulNBits" for n in model.graph.node)
    ids = np.random.default_rng(5).integers(0, VOCAB, size=(1, SEQUENCE)).astype(np.int64)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (logits,) = session.run(["logits"], {"input_ids": ids})
    np.savez_compressed(
        os.path.join(DATA, "llama_tiny_int4.npz"),
        **{"input:input_ids": ids, "output:logits": logits},
    )
    print(f"{path}: {os.path.getsize(path)} bytes, {nbits} MatMulNBits; ops {ops}")


if __name__ == "__main__":
    main()
