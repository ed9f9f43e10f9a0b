# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""graphkiln's gpu target against PyTorch eager and torch.compile, in one run, on one GPU.

Cases: resnet50 (torchvision) at batch 1 and 64, BERT-base (transformers BertModel, 12
layers, hidden 768, sequence 128) at batch 1 and 32, each in fp32 and fp16. The same
architecture and the same seeded random weights on every side: the torch model is exported to
ONNX once per shape and graphkiln compiles that file (fp16: `compile("gpu", fp16=True)`, the
torch side `.half()`).

Timing: every side gets its inputs already on the device (graphkiln reads them through
__cuda_array_interface__) and hands back its output as a host numpy array (graphkiln's run()
always does; torch's timed call ends with `.cpu()`), so each timed run includes one sync and
one device-to-host copy on both sides. BERT's output is its pooled output ([batch, 768]).
Median of --runs timed runs after --warmup untimed ones. With --device-io each side is also
timed with its output left on the device (graphkiln: run(..., outputs="device"), a
DeviceArray; torch: the output tensor, then torch.cuda.synchronize()), so neither copies
anything through the host: the "dev-io" columns. torch.compile uses mode
"reduce-overhead" (CUDA graphs); its compile time is its first call. graphkiln's compile time
is parse_onnx + compile with an empty kernel cache (cold: GRAPHKILN_KERNEL_CACHE set to a new
folder) and again with that cache filled (warm). TF32: off on both sides (graphkiln uses it
only with fast_math=True; PyTorch's convolutions would by default: --torch-tf32 keeps that).

With --ort, onnxruntime-gpu's CUDA execution provider runs the same ONNX file too (fp32 cases
only: it runs the file as exported; `use_tf32=0`), its inputs bound on the device and its
output copied to the host (IOBinding), like the other sides. "device MB" is what a program
holds on the device: for graphkiln and onnxruntime the growth of the device's used memory
(cudaMemGetInfo) from before the program is built to after its timed runs (weights,
activations, workspaces, library handles); for torch, torch.cuda.max_memory_allocated() over
its timed runs (weights and activations in PyTorch's allocator).

With --kernels, graphkiln's and torch.compile's runs are also traced by CUPTI (through
torch.profiler): device time a run in kernels and the kernels that take most of it.

    python3 benchmarks/gpu_vs_torch.py                       # all 8 cases
    python3 benchmarks/gpu_vs_torch.py --models resnet50 --precisions fp16 --no-torch-compile
    PYTHONPATH=/tmp/ortgpu python3 benchmarks/gpu_vs_torch.py --ort   # + onnxruntime-gpu
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import traceback

import numpy as np

BATCHES = {"resnet50": (1, 64), "bert_base": (1, 32)}
SEQ = 128


def build_torch_model(name: str, batch: int):
    """(module, example inputs as a tuple of CPU tensors, input names, output name)."""
    import torch

    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    if name == "resnet50":
        import torchvision

        model = torchvision.models.resnet50(weights=None).eval()
        return model, (torch.randn(batch, 3, 224, 224, generator=gen),), ["input"], "logits"
    if name == "bert_base":
        import transformers

        config = transformers.BertConfig()  # bert-base: 12 layers, hidden 768, 12 heads
        bert = transformers.BertModel(config).eval()

        class Pooled(torch.nn.Module):
            def __init__(self, bert):
                super().__init__()
                self.bert = bert

            def forward(self, input_ids, attention_mask):
                return self.bert(input_ids=input_ids, attention_mask=attention_mask).pooler_output

        ids = torch.randint(0, config.vocab_size, (batch, SEQ), generator=gen)
        mask = torch.ones(batch, SEQ, dtype=torch.int64)
        mask[:, SEQ - SEQ // 4 :] = 0
        return Pooled(bert).eval(), (ids, mask), ["input_ids", "attention_mask"], "pooled"
    raise ValueError(f"unknown model {name!r}: accepted {sorted(BATCHES)}")


def export(model, inputs, names, output, path):
    import torch

    torch.onnx.export(
        model,
        inputs,
        path,
        input_names=names,
        output_names=[output],
        opset_version=17,
        dynamo=False,
        do_constant_folding=True,
    )


def median_ms(fn, warmup: int, runs: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def print_profile(steps: list[tuple[str, float]], top: int = 12) -> None:
    """Device time per kernel type, and the slowest steps, of one kernel-by-kernel run."""
    by_kernel: dict[str, list[float]] = {}
    for name, ms in steps:
        by_kernel.setdefault(name.split(" ")[0], []).append(ms)
    total = sum(ms for _, ms in steps)
    print(f"  profile: {len(steps)} steps, {total:.3f} ms kernel by kernel")
    for kernel, times in sorted(by_kernel.items(), key=lambda kv: -sum(kv[1]))[:top]:
        print(f"    {kernel:<20} {sum(times):8.3f} ms  {len(times):4d} steps")
    for name, ms in sorted(steps, key=lambda s: -s[1])[:top]:
        print(f"    slowest: {ms:8.3f} ms  {name[:90]}")


def print_kernels(label: str, fn, runs: int = 10, top: int = 14) -> None:
    """The device kernels `fn` launches, read by CUPTI through torch.profiler (kernels
    inside CUDA graph replays included): device time per run in kernels, and the kernels
    that take the most of it, with their launches per run. For comparing where graphkiln's
    and torch.compile's time goes on the same case."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(runs):
                fn()
            torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - a profiler that cannot start is reported
        print(f"  kernels [{label}]: the profiler failed: {type(exc).__name__}: {exc}")
        return
    by_name: dict[str, list[float]] = {}
    for event in prof.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        by_name.setdefault(event.name, []).append(event.time_range.elapsed_us() / 1e3)
    total = sum(sum(v) for v in by_name.values()) / runs
    launches = sum(len(v) for v in by_name.values()) / runs
    print(f"  kernels [{label}]: {total:.3f} ms a run in {launches:.0f} device activities")
    for name, times in sorted(by_name.items(), key=lambda kv: -sum(kv[1]))[:top]:
        print(f"    {sum(times) / runs:8.3f} ms {len(times) / runs:6.1f}x  {name[:110]}")


def used_device_bytes() -> int:
    """Device memory in use on the current GPU (cudaMemGetInfo), by every allocator."""
    import torch

    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    return total - free


def graphkiln_side(
    path,
    device_inputs,
    precision,
    cache_root,
    warmup,
    runs,
    profile=False,
    device_io=False,
    kernels=False,
):
    import graphkiln

    before = used_device_bytes()
    options = {"fp16": True} if precision == "fp16" else {}
    os.environ["GRAPHKILN_KERNEL_CACHE"] = tempfile.mkdtemp(dir=cache_root)
    start = time.perf_counter()
    program = graphkiln.parse_onnx(path)
    program.compile("gpu", **options)
    cold = time.perf_counter() - start
    start = time.perf_counter()
    program = graphkiln.parse_onnx(path)
    program.compile("gpu", **options)
    warm = time.perf_counter() - start
    executable = program._executable  # device arrays go straight to the gpu executable
    out = executable.run(device_inputs)[0]
    ms = median_ms(lambda: executable.run(device_inputs), warmup, runs)
    ms_device = None
    if device_io:
        ms_device = median_ms(lambda: executable.run_on_device(device_inputs), warmup, runs)
    device_bytes = used_device_bytes() - before
    summary = executable.plan_summary()
    if profile:
        print_profile(executable.profile(device_inputs))
    if kernels:
        print_kernels("graphkiln", lambda: executable.run_on_device(device_inputs))
    return {
        "ms": ms,
        "device_bytes": device_bytes,
        "ms_device": ms_device,
        "cold_s": cold,
        "warm_s": warm,
        "out": out,
        "graph": summary.get("graph", "?"),
        "steps": summary.get("steps"),
    }


def ort_side(path, device_inputs, names, warmup, runs):
    """onnxruntime-gpu's CUDA execution provider on the ONNX file: inputs bound on the
    device, the output copied to the host (IOBinding)."""
    import onnxruntime as ort
    import torch

    numpy_types = {torch.float32: np.float32, torch.float16: np.float16, torch.int64: np.int64}
    before = used_device_bytes()
    start = time.perf_counter()
    session = ort.InferenceSession(
        path,
        providers=[
            ("CUDAExecutionProvider", {"device_id": 0, "use_tf32": 0}),
            "CPUExecutionProvider",
        ],
    )
    if session.get_providers()[0] != "CUDAExecutionProvider":
        raise RuntimeError(f"onnxruntime did not take the CUDA provider: {session.get_providers()}")
    binding = session.io_binding()
    for name, tensor in zip(names, device_inputs):
        binding.bind_input(
            name,
            "cuda",
            0,
            numpy_types[tensor.dtype],
            list(tensor.shape),
            tensor.data_ptr(),
        )
    output = session.get_outputs()[0].name
    binding.bind_output(output, "cpu")

    def run():
        session.run_with_iobinding(binding)
        return binding.copy_outputs_to_cpu()[0]

    out = run()
    first = time.perf_counter() - start
    ms = median_ms(run, warmup, runs)
    device_bytes = used_device_bytes() - before
    return {"ms": ms, "first_s": first, "out": out, "device_bytes": device_bytes}


def torch_side(model, device_inputs, compiled: bool, warmup, runs, device_io=False, kernels=False):
    import torch

    fn = torch.compile(model, mode="reduce-overhead") if compiled else model
    torch.cuda.reset_peak_memory_stats()

    def on_device():
        fn(*device_inputs)
        torch.cuda.synchronize()

    with torch.inference_mode():
        start = time.perf_counter()
        out = fn(*device_inputs).float().cpu().numpy()
        first = time.perf_counter() - start
        ms = median_ms(lambda: fn(*device_inputs).float().cpu(), warmup, runs)
        ms_device = median_ms(on_device, warmup, runs) if device_io else None
        if kernels:
            print_kernels("torch.compile" if compiled else "eager", on_device)
    device_bytes = torch.cuda.max_memory_allocated()
    return {
        "ms": ms,
        "ms_device": ms_device,
        "first_s": first,
        "out": out,
        "device_bytes": device_bytes,
    }


def run_case(name, batch, precision, args, cache_root, folder):
    import torch

    model, inputs, names, output = build_torch_model(name, batch)
    path = os.path.join(folder, f"{name}_b{batch}.onnx")
    if not os.path.exists(path):
        export(model, inputs, names, output, path)
    model = model.cuda()
    with torch.inference_mode():
        reference = model(*[t.cuda() for t in inputs]).float().cpu().numpy()
    if precision == "fp16":
        model = model.half()
    torch_inputs = [
        (t.half() if precision == "fp16" and t.is_floating_point() else t).cuda() for t in inputs
    ]
    gk_inputs = [t.cuda().contiguous() for t in inputs]  # graphkiln takes fp32 in either mode
    row = {"case": f"{name} b{batch} {precision}"}
    try:
        gk = graphkiln_side(
            path,
            gk_inputs,
            precision,
            cache_root,
            args.warmup,
            args.runs,
            args.profile,
            args.device_io,
            args.kernels,
        )
        scale = float(np.abs(reference).max()) or 1.0
        row.update(
            gk=gk["ms"],
            gk_cold=gk["cold_s"],
            gk_warm=gk["warm_s"],
            err=float(np.abs(gk["out"] - reference).max()) / scale,
            graph=gk["graph"],
            gk_mb=gk["device_bytes"] / 2**20,
        )
        if gk["ms_device"] is not None:
            row["gk_dev"] = gk["ms_device"]
    except Exception as exc:  # noqa: BLE001 - report the case and go on
        traceback.print_exc()
        row["gk_error"] = f"{type(exc).__name__}: {str(exc)[:160]}"
    if args.ort and precision == "fp32":
        try:
            result = ort_side(path, gk_inputs, names, args.warmup, args.runs)
            scale = float(np.abs(reference).max()) or 1.0
            row.update(
                ort=result["ms"],
                ort_mb=result["device_bytes"] / 2**20,
                ort_err=float(np.abs(result["out"] - reference).max()) / scale,
            )
        except Exception as exc:  # noqa: BLE001
            traceback.print_exc()
            row["ort_error"] = f"{type(exc).__name__}: {str(exc)[:160]}"
        torch.cuda.empty_cache()
    for key, compiled in (("eager", False), ("compile", True)):
        if compiled and args.no_torch_compile:
            continue
        try:
            result = torch_side(
                model,
                torch_inputs,
                compiled,
                args.warmup,
                args.runs,
                args.device_io,
                kernels=args.kernels and compiled,
            )
            row[key] = result["ms"]
            row[key + "_mb"] = result["device_bytes"] / 2**20
            if result["ms_device"] is not None:
                row[key + "_dev"] = result["ms_device"]
            if compiled:
                row["compile_s"] = result["first_s"]
        except Exception as exc:  # noqa: BLE001
            traceback.print_exc()
            row[key + "_error"] = f"{type(exc).__name__}: {str(exc)[:160]}"
        if compiled:
            torch.compiler.reset()
    return row


def fmt(row, key, spec=".2f"):
    return format(row[key], spec) if key in row else "-"


def ratio(row, key):
    return f"{row['gk'] / row[key]:.2f}" if "gk" in row and key in row else "-"


def dev_ratio(row, key):
    return f"{row['gk_dev'] / row[key]:.2f}" if "gk_dev" in row and key in row else "-"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--models",
        default="resnet50,bert_base",
        help=f"comma-separated, from {sorted(BATCHES)} (default both)",
    )
    parser.add_argument(
        "--batches",
        default="",
        help="comma-separated batch sizes (default: resnet50 1,64; bert_base 1,32)",
    )
    parser.add_argument("--precisions", default="fp32,fp16", help="fp32 and/or fp16")
    parser.add_argument("--runs", type=int, default=50, help="timed runs per side (default 50)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed runs first (default 10)")
    parser.add_argument(
        "--no-torch-compile",
        action="store_true",
        help="skip torch.compile (it takes about a minute per case)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="also print graphkiln's device time per kernel type"
    )
    parser.add_argument(
        "--kernels",
        action="store_true",
        help="also list the device kernels of graphkiln's and torch.compile's runs (CUPTI, "
        "through torch.profiler): where each side's time goes",
    )
    parser.add_argument(
        "--device-io",
        action="store_true",
        help="also time each side with its output left on the device (no host copy)",
    )
    parser.add_argument(
        "--torch-tf32",
        action="store_true",
        help="leave PyTorch's TF32 convolutions on (its default) in fp32 cases; "
        "by default TF32 is off on both sides, as graphkiln uses none unless "
        "compiled with fast_math=True",
    )
    parser.add_argument(
        "--ort",
        action="store_true",
        help="also run onnxruntime-gpu's CUDA execution provider on the same files (fp32 cases)",
    )
    args = parser.parse_args()
    if args.runs < 1 or args.warmup < 0:
        parser.error("--runs must be >= 1 and --warmup >= 0")
    for p in args.precisions.split(","):
        if p not in ("fp32", "fp16"):
            parser.error(f"--precisions: {p!r} is not fp32 or fp16")

    import torch

    if not args.torch_tf32:
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    print(
        f"torch {torch.__version__} on {torch.cuda.get_device_name()}; "
        f"torch TF32: matmul {torch.backends.cuda.matmul.allow_tf32}, "
        f"cudnn {torch.backends.cudnn.allow_tf32}; graphkiln TF32 off",
        flush=True,
    )
    header = (
        "| case | graphkiln ms | eager ms | torch.compile ms | gk/eager | gk/compile "
        "| gk compile cold s | gk compile warm s | torch.compile s | max err / max|ref| "
        "| graph |"
    )
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        cache_root = os.path.join(folder, "kernel-caches")
        os.makedirs(cache_root)
        for name in args.models.split(","):
            batches = [int(b) for b in args.batches.split(",")] if args.batches else BATCHES[name]
            for batch in batches:
                for precision in args.precisions.split(","):
                    row = run_case(name, batch, precision, args, cache_root, folder)
                    rows.append(row)
                    print(
                        f"[{row['case']}] "
                        + ", ".join(
                            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                            for k, v in row.items()
                            if k != "case"
                        ),
                        flush=True,
                    )
    print()
    print(header)
    print("| --- " * 11 + "|")
    for row in rows:
        print(
            f"| {row['case']} | {fmt(row, 'gk', '.3f')} | {fmt(row, 'eager', '.3f')} "
            f"| {fmt(row, 'compile', '.3f')} | {ratio(row, 'eager')} | {ratio(row, 'compile')} "
            f"| {fmt(row, 'gk_cold', '.1f')} | {fmt(row, 'gk_warm', '.1f')} "
            f"| {fmt(row, 'compile_s', '.1f')} | {fmt(row, 'err', '.2e')} "
            f"| {row.get('graph', row.get('gk_error', '-'))} |"
        )
    print()
    print(
        "| case | graphkiln ms | onnxruntime-gpu ms | gk/ort | graphkiln device MB "
        "| onnxruntime device MB | eager device MB | torch.compile device MB | ort max err |"
    )
    print("| --- " * 9 + "|")
    for row in rows:
        print(
            f"| {row['case']} | {fmt(row, 'gk', '.3f')} | {fmt(row, 'ort', '.3f')} "
            f"| {ratio(row, 'ort')} | {fmt(row, 'gk_mb', '.0f')} | {fmt(row, 'ort_mb', '.0f')} "
            f"| {fmt(row, 'eager_mb', '.0f')} | {fmt(row, 'compile_mb', '.0f')} "
            f"| {fmt(row, 'ort_err', '.2e') if 'ort_err' in row else row.get('ort_error', '-')} |"
        )
    if args.device_io:
        print()
        print(
            "| case | graphkiln dev-io ms | eager dev-io ms | torch.compile dev-io ms "
            "| gk/eager | gk/compile |"
        )
        print("| --- " * 6 + "|")
        for row in rows:
            print(
                f"| {row['case']} | {fmt(row, 'gk_dev', '.3f')} | {fmt(row, 'eager_dev', '.3f')} "
                f"| {fmt(row, 'compile_dev', '.3f')} | {dev_ratio(row, 'eager_dev')} "
                f"| {dev_ratio(row, 'compile_dev')} |"
            )
    return 0 if all("gk" in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
