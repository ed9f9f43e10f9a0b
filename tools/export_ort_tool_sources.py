# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The float models that tests/frontends/test_onnxruntime_tools.py hands to onnxruntime's own
tools while the tests run (the transformer optimizer, MatMulNBitsQuantizer):

- tests/frontends/data/t5_tiny.onnx: a T5-style encoder (transformers' T5EncoderModel: RMS
  norms, relative position bias, ReLU feed-forward; 2 layers, d_model 64, 4 heads, seeded
  weights), exported by torch's TorchScript exporter (the graph onnxruntime's T5 fusions
  look for) with symbolic batch and sequence;
- tests/frontends/data/llama_tiny.onnx: tools/export_llama_nbits.py's Llama-style decoder,
  in float (that tool records its int4 form).

Runs in the export venv (torch, transformers, onnx: benchmarks/requirements-export.txt):
    /work/venv-export/bin/python tools/export_ort_tool_sources.py
"""

from __future__ import annotations

import os

from export_llama_nbits import DATA, export_float


def export_t5(path: str) -> None:
    import torch
    import transformers as tf

    torch.manual_seed(0)
    config = tf.T5Config(
        vocab_size=256,
        d_model=64,
        d_kv=16,
        d_ff=128,
        num_layers=2,
        num_heads=4,
        relative_attention_num_buckets=16,
        relative_attention_max_distance=32,
        dropout_rate=0.0,
        feed_forward_proj="relu",
    )
    encoder = tf.T5EncoderModel(config).eval()

    class Hidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask, return_dict=True)
            return out.last_hidden_state

    ids = torch.randint(1, 256, (2, 12))
    mask = torch.ones((2, 12), dtype=torch.int64)
    dims = {0: "batch", 1: "sequence"}
    torch.onnx.export(
        Hidden(encoder),
        (ids, mask),
        path,
        input_names=["input_ids", "attention_mask"],
        output_names=["hidden"],
        opset_version=17,
        dynamo=False,
        dynamic_axes={"input_ids": dims, "attention_mask": dims, "hidden": dims},
    )


def main() -> None:
    for name, export in (("t5_tiny", export_t5), ("llama_tiny", export_float)):
        path = os.path.join(DATA, f"{name}.onnx")
        export(path)
        print(f"{path}: {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
