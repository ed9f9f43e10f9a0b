# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`graphkiln export-triton MODEL --repo DIR`: a Triton Inference Server model repository
(Python backend) that runs the model with graphkiln."""

from __future__ import annotations

import argparse

from .serve_cmd import _non_negative, _positive_int


def _gpu_list(text: str) -> list[int]:
    try:
        gpus = [int(g) for g in text.split(",") if g.strip()]
    except ValueError:
        gpus = [-1]
    if not gpus or any(g < 0 for g in gpus) or len(set(gpus)) != len(gpus):
        raise argparse.ArgumentTypeError(
            f"expected GPU ids such as 0,1 (each once, >= 0), got {text!r}"
        )
    return gpus


def setup_export_triton(p):
    p.add_argument("model", help="ONNX model or saved program (.gkp) to export")
    p.add_argument(
        "--repo",
        required=True,
        metavar="DIR",
        help="the model repository folder (created; the model goes in DIR/NAME)",
    )
    p.add_argument(
        "--name",
        default=None,
        help="the model's name in Triton (default: the file's name without its extension)",
    )
    p.add_argument(
        "--max-batch",
        type=_positive_int,
        default=8,
        metavar="N",
        help="max_batch_size for models with a symbolic dim 0 shared by every input "
        "and output (default 8; 1 or other models: 0, no batching)",
    )
    p.add_argument(
        "--max-delay-ms",
        type=_non_negative,
        default=2.0,
        metavar="MS",
        help="dynamic_batching's max_queue_delay (default 2)",
    )
    p.add_argument(
        "--gpus",
        type=_gpu_list,
        default=None,
        metavar="IDS",
        help="one instance_group of KIND_GPU per GPU id, e.g. 0,1 (default: none, "
        "instances on the CPU)",
    )
    p.add_argument(
        "--instances",
        type=_positive_int,
        default=1,
        metavar="N",
        help="instances per GPU (or on the CPU without --gpus; default 1)",
    )
    p.add_argument(
        "--cpu-target",
        choices=("cpu", "ref"),
        default="cpu",
        help="the target of KIND_CPU instances (default cpu)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace DIR/NAME if it exists")


def cmd_export_triton(args) -> int:
    from ..serving.triton import export_triton

    try:
        folder = export_triton(
            args.model,
            args.repo,
            name=args.name,
            max_batch=args.max_batch,
            max_delay_us=int(args.max_delay_ms * 1000),
            gpus=args.gpus,
            instances=args.instances,
            cpu_target=args.cpu_target,
            overwrite=args.overwrite,
        )
    except ValueError as exc:
        raise SystemExit(f"graphkiln export-triton: {exc}") from None
    print(
        f"wrote {folder} (config.pbtxt, 1/model.py and the model); serve it with "
        f"`tritonserver --model-repository {args.repo}` where the Python backend's "
        "environment has graphkiln installed"
    )
    return 0
