# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""MatMulNBits (com.microsoft int4 / int8 weight-only MatMul) on the gpu target against the
memory it must read, with PyTorch's fp16 matmul of the same (dequantized) weight as the peer,
in one run on one GPU.

Per case (batch M, N outputs, K inputs, bits, block size): graphkiln's kernel time is the
median over --runs of its plan's one step timed on the device (executor.profile(): CUDA
events around the kernel, the inputs already on the device); the bytes it needs are the packed
weight, the scales and A read once and Y written once; "% of copy" sets bytes / time against
the device-to-device copy rate measured in the same run (torch: a 1 GiB tensor's copy_, read +
write; from 48 rows of A on the kernel dequantizes W into its workspace and runs a float32
GEMM, whose bytes are not counted: the column then only says how far from the weight-bound
time it is). The peer: torch.matmul of A (fp16) and the dequantized weight in fp16 (cuBLAS, 4x the
weight bytes of int4), timed with CUDA events over --runs calls; gk/torch < 1 means faster.

    python3 benchmarks/matmul_nbits_gpu.py [--runs 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "frontends"))

# (M, N, K, bits, block_size): Llama-7B-class projections at batch 1, and a few batches
CASES = [
    (1, 4096, 4096, 4, 32),
    (1, 4096, 4096, 4, 128),
    (1, 11008, 4096, 4, 32),
    (1, 4096, 11008, 4, 32),
    (1, 14336, 4096, 4, 64),
    (1, 4096, 4096, 8, 32),
    (4, 4096, 4096, 4, 32),
    (16, 4096, 4096, 4, 32),
    (48, 4096, 4096, 4, 32),
    (64, 4096, 4096, 4, 32),
    (512, 4096, 4096, 4, 32),
]


def copy_rate(torch) -> float:
    """Device copy rate (read + write bytes per second) of a 1 GiB tensor, median of 20."""
    src = torch.empty(2**28, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    times = []
    for _ in range(25):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    return 2 * src.numel() * 4 / statistics.median(times[5:])


def torch_ms(torch, a, w, runs: int) -> float:
    for _ in range(10):
        torch.matmul(a, w)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(runs):
        torch.matmul(a, w)
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / runs


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=200, help="timed runs per side")
    args = parser.parse_args()

    import torch
    from onnx import numpy_helper

    import graphkiln as gk
    from graphkiln.targets.ref.matmul_nbits import dequantized_weight
    from microsoft_nbits_models import _model

    rate = copy_rate(torch)
    print(f"{torch.cuda.get_device_name()}: device copy {rate / 1e12:.2f} TB/s (read + write)")
    print()
    print(
        "| M | N | K | bits | block | graphkiln us | GB/s | % of copy | torch fp16 us | gk/torch "
        "| max err / max|ref| |"
    )
    print("| --- " * 11 + "|")
    rng = np.random.default_rng(0)
    for m, n, k, bits, block in CASES:
        model, feeds = _model("case", rng, (m, k), n, bits, block, "none", False)
        program = gk.parse_onnx_buffer(model.SerializeToString())
        program.compile("gpu")
        executable = program._executable
        a = torch.from_numpy(feeds["a"]).cuda()
        want = gk.parse_onnx_buffer(model.SerializeToString()).compile("ref").run(feeds)[0]
        got = executable.run([a])[0]
        err = float(np.abs(got - want).max() / np.abs(want).max())
        for _ in range(10):
            executable.profile([a])
        kernel_ms = statistics.median(
            sum(ms for _, ms in executable.profile([a])) for _ in range(args.runs)
        )
        k_blocks = -(-k // block)
        needed = n * k_blocks * block * bits // 8 + n * k_blocks * 4 + m * k * 4 + m * n * 4
        gbps = needed / (kernel_ms / 1e3) / 1e9
        consts = {i.name: i for i in model.graph.initializer}
        weight = dequantized_weight(
            numpy_helper.to_array(consts["B"]),
            numpy_helper.to_array(consts["scales"]),
            None,
            K=k,
            N=n,
            bits=bits,
            block_size=block,
        )
        w16 = torch.from_numpy(weight.T.astype(np.float16)).cuda().contiguous()
        t_ms = torch_ms(torch, a.half(), w16, args.runs)
        print(
            f"| {m} | {n} | {k} | {bits} | {block} | {kernel_ms * 1e3:.1f} | {gbps:.0f} "
            f"| {100 * needed / (kernel_ms / 1e3) / rate:.0f}% | {t_ms * 1e3:.1f} "
            f"| {kernel_ms / t_ms:.2f} | {err:.1e} |",
            flush=True,
        )
        del executable, program, w16
    return 0


if __name__ == "__main__":
    sys.exit(main())
