# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Record onnxruntime's outputs for the com.microsoft op tests (tests/frontends/
test_microsoft_ops.py), so that CI compares graphkiln with onnxruntime without it:

- tests/frontends/data/microsoft_ops.npz: every case of tests/frontends/microsoft_models.py
  (one com.microsoft node each), keys "<case>/input/<name>" and "<case>/output/<name>";
- tests/frontends/data/<model>_ort_optimized.onnx: tests/models/dynamic/<model>.onnx
  (bert_tiny, gpt2_tiny) rewritten by onnxruntime's transformer optimizer (opt_level 0, on
  cpu), and <model>_ort_optimized.npz with onnxruntime's outputs on seeded feeds at two
  shapes (keys "input:<j>:<name>", "output:<j>:<name>", as tests/models/dynamic/).

onnxruntime is no dependency of graphkiln (the test extra has it); without it installed, run:
    pip install --target /tmp/ortsite onnxruntime sympy
    PYTHONPATH=/tmp/ortsite:python python tools/record_microsoft_ops.py
"""

from __future__ import annotations

import collections
import os
import sys
import tempfile

import numpy as np
import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "frontends", "data")
sys.path.insert(0, os.path.join(ROOT, "tests", "frontends"))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from microsoft_models import OPTIMIZED, build_cases  # noqa: E402
from more_dynamic_models_2 import make_inputs_2  # noqa: E402

# feeds' shapes of the optimized models: two per model
OPTIMIZED_SHAPES = {
    "bert_tiny": [(2, 9), (3, 16)],
    "gpt2_tiny": [(1, 6), (2, 12)],
}
# onnxruntime registers these in the default domain only: run there (same semantics)
DEFAULT_DOMAIN_IN_ORT = {"SimplifiedLayerNormalization"}


def _session(model: onnx.ModelProto):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def _run(model: onnx.ModelProto, feeds: dict) -> dict:
    session = _session(model)
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def record_cases() -> None:
    from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as NoKernel

    arrays = {}
    for name, (model, feeds) in build_cases().items():
        if model.graph.node[0].op_type in DEFAULT_DOMAIN_IN_ORT:
            model = onnx.ModelProto.FromString(model.SerializeToString())
            model.graph.node[0].domain = ""
        for key, value in feeds.items():
            arrays[f"{name}/input/{key}"] = value
        try:
            outputs = _run(model, feeds)
        except NoKernel as exc:  # onnxruntime has no cpu kernel for it (BiasAdd: cuda only)
            print(f"{name}: not recorded, onnxruntime cannot run it: {exc}")
            continue
        for key, value in outputs.items():
            arrays[f"{name}/output/{key}"] = value
        print(f"{name}: recorded")
    np.savez_compressed(os.path.join(DATA, "microsoft_ops.npz"), **arrays)


def record_optimized() -> None:
    from onnxruntime.transformers import optimizer

    for name, (source, heads, hidden, model_type) in OPTIMIZED.items():
        path = os.path.join(ROOT, "tests", "models", "dynamic", source + ".onnx")
        optimized = optimizer.optimize_model(
            path,
            model_type=model_type,
            num_heads=heads,
            hidden_size=hidden,
            opt_level=0,
            use_gpu=False,
        )
        with tempfile.TemporaryDirectory() as tmp:
            saved = os.path.join(tmp, "model.onnx")
            optimized.save_model_to_file(saved)
            model = onnx.load(saved)
        onnx.save(model, os.path.join(DATA, f"{name}_ort_optimized.onnx"))
        ops = collections.Counter(
            f"{n.domain}::{n.op_type}" for n in model.graph.node if n.domain == "com.microsoft"
        )
        print(f"{name}: com.microsoft ops {dict(sorted(ops.items()))}")
        inputs = [i.name for i in model.graph.input]
        rng = np.random.default_rng(7)
        arrays = {}
        for j, shape in enumerate(OPTIMIZED_SHAPES[name]):
            feeds = make_inputs_2(source, {k: shape for k in inputs}, rng)
            for key, value in feeds.items():
                arrays[f"input:{j}:{key}"] = value
            for key, value in _run(model, feeds).items():
                arrays[f"output:{j}:{key}"] = value
        np.savez_compressed(os.path.join(DATA, f"{name}_ort_optimized.npz"), **arrays)


def main() -> None:
    os.makedirs(DATA, exist_ok=True)
    record_cases()
    record_optimized()


if __name__ == "__main__":
    main()
