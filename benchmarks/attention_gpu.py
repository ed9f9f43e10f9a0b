#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""graphkiln's Attention kernels at BERT-base shapes on the GPU, per kernel variant, against
PyTorch's scaled_dot_product_attention on the same inputs in the same run (a benchmark, not a
test; needs torch).

    python3 benchmarks/attention_gpu.py [--batches 1,32] [--precisions fp16,fp32] [--runs 20]

Per case ([B, 128, 12 * 64] q, k, v and an additive [B, 1, 128, 128] mask, as the exported
BERT has them; "nomask" drops the mask): a chain of 8 Attention nodes (each output is the
next query) compiled for the gpu target with the tuning variant forced on every step
(0: the heuristic, tensor cores; 2: the scalar fused kernel; 3: unfused), timed kernel by
kernel on the device (GpuExecutable.profile: the median over runs of the median step);
torch's time is the median of CUDA-event-timed calls of scaled_dot_product_attention on
[B, 12, 128, 64] tensors (its default backend choice), in the same precision.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

HEADS, SEQ, DIM, CHAIN = 12, 128, 64, 8


def chain_model(batch: int, masked: bool) -> bytes:
    from onnx import TensorProto, helper

    width = HEADS * DIM
    inputs = [
        helper.make_tensor_value_info(n, TensorProto.FLOAT, [batch, SEQ, width])
        for n in ("q", "k", "v")
    ]
    extra = []
    if masked:
        inputs.append(helper.make_tensor_value_info("m", TensorProto.FLOAT, [batch, 1, SEQ, SEQ]))
        extra = ["m"]
    nodes, query = [], "q"
    for i in range(CHAIN):
        out = f"y{i}"
        nodes.append(
            helper.make_node(
                "Attention",
                [query, "k", "v", *extra],
                [out],
                name=f"attention{i}",
                q_num_heads=HEADS,
                kv_num_heads=HEADS,
            )
        )
        query = out
    output = helper.make_tensor_value_info(query, TensorProto.FLOAT, [batch, SEQ, width])
    graph = helper.make_graph(nodes, "attention_chain", inputs, [output])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)]).SerializeToString()


def feeds(batch: int, masked: bool, seed: int = 5) -> dict:
    rng = np.random.default_rng(seed)
    shape = (batch, SEQ, HEADS * DIM)
    out = {n: rng.uniform(-1, 1, shape).astype(np.float32) for n in ("q", "k", "v")}
    if masked:
        mask = np.zeros((batch, 1, SEQ, SEQ), np.float32)
        mask[..., SEQ - 9 :] = -10000.0  # padding keys, as BERT's mask has them
        out["m"] = mask
    return out


def graphkiln_ms(batch, masked, precision, variant, runs) -> float:
    import graphkiln as gk
    from graphkiln.targets.gpu import target as gpu_target

    lower = gpu_target.lower_plan

    def lower_with_variant(graph, fast_math=False, channels_last=False):
        plan = lower(graph, fast_math, channels_last)
        for step in plan.steps:
            if step.kernel == "Attention":
                step.attrs["variant"] = variant
        return plan

    gpu_target.lower_plan = lower_with_variant
    try:
        options = {precision: True} if precision != "fp32" else {}
        program = gk.parse_onnx_buffer(chain_model(batch, masked))
        program.compile("gpu", tuning=False, **options)
    finally:
        gpu_target.lower_plan = lower
    executable = program._executable
    data = feeds(batch, masked)
    arrays = [data[v.name] for v in program.graph.inputs]
    executable.profile(arrays)  # warm-up
    medians = []
    for _ in range(runs):
        # profile names steps "Kernel 'node'"
        steps = [ms for name, ms in executable.profile(arrays) if name.startswith("Attention ")]
        medians.append(statistics.median(steps))
    return statistics.median(medians)


def torch_ms(batch, masked, precision, runs) -> float:
    import torch
    import torch.nn.functional as F

    dtype = torch.float16 if precision == "fp16" else torch.float32
    data = feeds(batch, masked)
    q, k, v = (
        torch.from_numpy(data[n]).cuda().to(dtype).view(batch, SEQ, HEADS, DIM).transpose(1, 2)
        for n in ("q", "k", "v")
    )
    mask = torch.from_numpy(data["m"]).cuda().to(dtype) if masked else None
    for _ in range(10):
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    times = []
    for _ in range(runs * CHAIN):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batches", default="1,32", help="comma-separated (default 1,32)")
    parser.add_argument("--precisions", default="fp16,fp32", help="fp16 and/or fp32")
    parser.add_argument(
        "--variants", default="0,2,3", help="Attention tuning variants to time (default 0,2,3)"
    )
    parser.add_argument("--runs", type=int, default=20, help="profiled runs (default 20)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    for p in args.precisions.split(","):
        if p not in ("fp16", "fp32"):
            parser.error(f"--precisions: {p!r} is not fp16 or fp32")
    variants = [int(v) for v in args.variants.split(",")]
    print(
        "| case | "
        + " | ".join(f"gk variant {v} ms" for v in variants)
        + " | torch sdpa ms | best gk / torch |"
    )
    print("|" + " --- |" * (len(variants) + 3))
    for precision in args.precisions.split(","):
        for batch in (int(b) for b in args.batches.split(",")):
            for masked in (True, False):
                times = [graphkiln_ms(batch, masked, precision, v, args.runs) for v in variants]
                peer = torch_ms(batch, masked, precision, args.runs)
                name = f"b{batch} {precision} {'mask' if masked else 'nomask'}"
                cells = " | ".join(f"{t:.4f}" for t in times)
                print(f"| {name} | {cells} | {peer:.4f} | {min(times) / peer:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
