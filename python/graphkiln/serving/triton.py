# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`graphkiln export-triton`: a Triton Inference Server model repository that runs a model
with graphkiln on Triton's Python backend:

    REPO/NAME/config.pbtxt      inputs, outputs, max_batch_size, dynamic_batching,
                                instance_group (per GPU, or on the CPU)
    REPO/NAME/1/model.py        TritonPythonModel: compiles the model on its instance's
                                device (gpu target on KIND_GPU, cpu on KIND_CPU), runs each
                                batch Triton hands it (same-shaped requests concatenated)
    REPO/NAME/1/model.onnx      the model (or model.gkp, a saved program)

The config follows Triton's model configuration (model_config.proto, in protobuf text
format). Triton itself is not part of graphkiln's tests: they check the config against that
schema and run model.py against a stand-in of triton_python_backend_utils."""

from __future__ import annotations

import os
import shutil

from .models import ServedModel

# protocol datatype -> Triton's DataType enum name (BYTES is TYPE_STRING there)
TRITON_TYPES = {
    "BOOL": "TYPE_BOOL",
    "UINT8": "TYPE_UINT8",
    "UINT16": "TYPE_UINT16",
    "UINT32": "TYPE_UINT32",
    "UINT64": "TYPE_UINT64",
    "INT8": "TYPE_INT8",
    "INT16": "TYPE_INT16",
    "INT32": "TYPE_INT32",
    "INT64": "TYPE_INT64",
    "FP16": "TYPE_FP16",
    "FP32": "TYPE_FP32",
    "FP64": "TYPE_FP64",
    "BF16": "TYPE_BF16",
    "BYTES": "TYPE_STRING",
}

MODEL_PY = '''\
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Triton Python-backend model written by `graphkiln export-triton`: runs the model file
beside it with graphkiln (pip install graphkiln in the backend's Python environment)."""

import json
import os

import numpy as np
import triton_python_backend_utils as pb_utils


def _use_device(device_id):
    """Make the instance's GPU the only one this process sees (before any GPU code loads)."""
    for var in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"):
        visible = [d for d in os.environ.get(var, "").split(",") if d.strip()]
        os.environ[var] = visible[device_id] if device_id < len(visible) else str(device_id)


class TritonPythonModel:
    """Compiles the model for this instance's device in initialize(), runs it in execute()."""

    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = {k: v.get("string_value", "") for k, v in config.get("parameters", {}).items()}
        kind = args.get("model_instance_kind", "CPU")
        if kind == "GPU":
            _use_device(int(args.get("model_instance_device_id", 0)))
            target = "gpu"
        else:
            target = params.get("graphkiln_cpu_target", "cpu")
        import graphkiln
        from graphkiln.serving.models import ServedModel
        from graphkiln.serving.repository import load_program

        folder = os.path.join(args["model_repository"], args["model_version"])
        path = os.path.join(folder, params["graphkiln_model"])
        self.model = ServedModel(config["name"], load_program(path, target),
                                 platform="graphkiln_" + target)
        self.max_batch = max(1, int(config.get("max_batch_size", 0)))

    def execute(self, requests):
        from graphkiln.serving.batcher import batch_key, batch_rows, run_batch

        feeds, answers, groups = [], [None] * len(requests), {}
        for i, request in enumerate(requests):
            try:
                f = {s.name: pb_utils.get_input_tensor_by_name(request, s.name).as_numpy()
                     for s in self.model.inputs}
                self.model.check_feeds(f)
            except Exception as exc:  # this request only
                answers[i] = pb_utils.InferenceResponse(
                    error=pb_utils.TritonError(getattr(exc, "message", str(exc))))
                f = None
            feeds.append(f)
            if f is not None:
                groups.setdefault(batch_key(self.model, f), []).append(i)
        for members in groups.values():
            chunks, chunk, rows = [], [], 0
            for i in members:  # at most max_batch_size rows per run
                r = batch_rows(self.model, feeds[i])
                if chunk and rows + r > self.max_batch:
                    chunks.append(chunk)
                    chunk, rows = [], 0
                chunk.append(i)
                rows += r
            chunks.append(chunk)
            for chunk in chunks:
                for i, out in zip(chunk, run_batch(self.model, [feeds[i] for i in chunk])):
                    if isinstance(out, BaseException):
                        answers[i] = pb_utils.InferenceResponse(error=pb_utils.TritonError(
                            f"{type(out).__name__}: {out}"))
                    else:
                        answers[i] = pb_utils.InferenceResponse(output_tensors=[
                            pb_utils.Tensor(name, np.ascontiguousarray(value))
                            for name, value in zip(self.model.output_names, out)])
        return answers

    def finalize(self):
        self.model = None
'''


def _tensor(spec, cut: int, indent: str) -> str:
    dims = spec.metadata()["shape"][cut:]
    lines = [
        f'{indent}  name: "{spec.name}"',
        f"{indent}  data_type: {TRITON_TYPES[spec.datatype]}",
    ]
    if not dims:  # a scalar: Triton wants dims of one element, reshaped away
        lines += [f"{indent}  dims: [ 1 ]", f"{indent}  reshape: {{ shape: [ ] }}"]
    else:
        lines.append(f"{indent}  dims: [ {', '.join(str(d) for d in dims)} ]")
    return f"{indent}{{\n" + "\n".join(lines) + f"\n{indent}}}"


def config_text(
    model: ServedModel,
    *,
    model_file: str,
    max_batch: int = 8,
    max_delay_us: int = 2000,
    gpus: list[int] | None = None,
    instances: int = 1,
    cpu_target: str = "cpu",
) -> str:
    """config.pbtxt for `model`: batched along dim 0 (max_batch_size, dynamic_batching)
    where the model batches, else max_batch_size 0 with full dims; one instance_group per
    GPU in `gpus` (`instances` each), or `instances` on the CPU when `gpus` is empty."""
    batching = model.batch_symbol is not None and max_batch > 1
    cut = 1 if batching else 0
    out = [
        f'name: "{model.name}"',
        'backend: "python"',
        f"max_batch_size: {max_batch if batching else 0}",
    ]
    out.append("input [\n" + ",\n".join(_tensor(s, cut, "  ") for s in model.inputs) + "\n]")
    out.append("output [\n" + ",\n".join(_tensor(s, cut, "  ") for s in model.outputs) + "\n]")
    if batching:
        out.append(f"dynamic_batching {{\n  max_queue_delay_microseconds: {max_delay_us}\n}}")
    if gpus:
        groups = [
            f"  {{\n    count: {instances}\n    kind: KIND_GPU\n    gpus: [ {g} ]\n  }}"
            for g in gpus
        ]
    else:
        groups = [f"  {{\n    count: {instances}\n    kind: KIND_CPU\n  }}"]
    out.append("instance_group [\n" + ",\n".join(groups) + "\n]")
    params = [("graphkiln_model", model_file), ("graphkiln_cpu_target", cpu_target)]
    out.append(
        "parameters [\n"
        + ",\n".join(
            f'  {{\n    key: "{k}"\n    value: {{ string_value: "{v}" }}\n  }}' for k, v in params
        )
        + "\n]"
    )
    return "\n".join(out) + "\n"


def export_triton(
    path: str,
    repo: str,
    *,
    name: str | None = None,
    max_batch: int = 8,
    max_delay_us: int = 2000,
    gpus: list[int] | None = None,
    instances: int = 1,
    cpu_target: str = "cpu",
    overwrite: bool = False,
) -> str:
    """Write REPO/NAME (config.pbtxt, 1/model.py, 1/model.onnx or model.gkp) for the model
    in `path`; return that folder. The model is imported here (for its inputs and outputs)
    but compiled by each Triton instance on its own device."""
    import graphkiln
    from graphkiln.serialize import is_saved_program

    if not os.path.isfile(path):
        raise ValueError(f"model file {path!r} does not exist")
    saved = is_saved_program(path)
    prog = graphkiln.load(path) if saved else graphkiln.parse_onnx(path)
    name = name or os.path.splitext(os.path.basename(path))[0]
    model = ServedModel(name, prog)
    folder = os.path.join(repo, name)
    if os.path.exists(folder) and not overwrite:
        raise ValueError(f"{folder} exists; pass --overwrite to replace it")
    if os.path.exists(folder):
        shutil.rmtree(folder)
    os.makedirs(os.path.join(folder, "1"))
    model_file = "model.gkp" if saved else "model.onnx"
    shutil.copyfile(path, os.path.join(folder, "1", model_file))
    with open(os.path.join(folder, "1", "model.py"), "w", encoding="utf-8") as f:
        f.write(MODEL_PY)
    with open(os.path.join(folder, "config.pbtxt"), "w", encoding="utf-8") as f:
        f.write(
            config_text(
                model,
                model_file=model_file,
                max_batch=max_batch,
                max_delay_us=max_delay_us,
                gpus=gpus,
                instances=instances,
                cpu_target=cpu_target,
            )
        )
    return folder
