# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The gpu target: the device check first (graphkiln.device.require_gpu), the full pass
pipeline, then a plan per input shape lowered by the native LoweringContext (targets/native)
with the gpu lowering table (plain layouts everywhere) and run by graphkiln._core.GpuExecutor:
constants uploaded once, and a pool of up to `max_concurrency` execution contexts (each its
own arena, staging buffers, stream and graph: src/gpu/executor.hpp), so runs from several
threads overlap; per run inputs in, kernels, outputs out, one sync of the context's stream.
The plans per input shape live in a thread-safe cache (plan_cache.py); `shapes=[...]` builds
listed ones while compiling, and a saved program keeps the shapes of its plans, built again
when it is loaded (serialize/gpu_plan.py). An op without a GPU kernel is a compile-time error
naming it."""

from __future__ import annotations

import numpy as np

from ...ir import Graph, Node, TensorType, Value
from ..base import Executable, Target
from ..concurrency import OPTION_HELP as CONCURRENCY_HELP
from ..concurrency import max_concurrency
from ..native.bounded import bounded_outputs, cut_bounded
from ..native.kernel_contracts import HOST_STEP_PREFIX
from ..native.lower import LoweringContext, LoweringError, static_dims
from ..native.lower_support import folded_when_specialized, node_supported, support_decision
from ..native.plan import Plan
from ..native.lower_loops import holds_loops, refusal_detail
from ..native.specialize import plan_graph, shape_deciding_inputs
from ..plan_options import CACHE_HELP, SHAPES_HELP, ahead_shapes, plan_cache_size
from .plan_cache import PlanCache
from .specialize import parameter_inputs, specialize_values
from .table import LOWERINGS, SUPPORT

DEFAULT_MAX_CONCURRENCY = 4  # execution contexts per plan unless the options say otherwise
MAX_PLANS = 32  # plans kept per program (least recently used dropped first), as on cpu


class GpuTarget(Target):
    name = "gpu"
    options = {
        "blas": "'builtin' runs matrix products on graphkiln's own kernel instead of "
        "the vendor BLAS (default 'vendor': cuBLAS / rocBLAS when found)",
        "graphs": "True (default) replays each plan as one HIP/CUDA graph from its "
        "second run on; False launches the kernels one by one every run",
        "fp16": "True runs the float32 work in float16 (float32 accumulation; "
        "normalizations, softmax and reductions stay float32; inputs and "
        "outputs stay float32): targets/gpu/precision.py; default False",
        "bf16": "True: as fp16 with bfloat16 (excludes fp16); default False",
        "fast_math": "True lets float32 matrix products and convolutions round their "
        "operands to TF32 on tensor cores (cuBLAS); default False",
        # graphkiln.tuning (tuning/gpu.py)
        "exhaustive_tune": "True times the variants of every tunable kernel "
        "(attention, convolution) on this GPU and stores the "
        "winners in the tuning database; default False",
        "tuning": "False ignores the tuning database (heuristic kernel choices only); default True",
        "channels_last": "True / False: half-precision convolutions at batch 2 or "
        "more run in NHWC on cuDNN's tensor-core kernels; default: "
        "where cuDNN runs Conv steps (GRAPHKILN_GPU_NHWC=0 turns it "
        "off)",
        "max_concurrency": CONCURRENCY_HELP + f" (gpu default: {DEFAULT_MAX_CONCURRENCY})",
        "device": "which GPU runs the program (0, 1, ...; default: GRAPHKILN_GPU_DEVICE, else "
        "the current one, device 0 unless the caller chose another): every allocation, "
        "stream, handle and graph of the program is on it",
        "plan_cache_size": CACHE_HELP,
        "shapes": SHAPES_HELP + "; gpu plans are the device's: the file keeps "
        "the shapes of the plans built, rebuilt on load",
    }

    def passes(self, options: dict) -> list:
        from ...passes.pipelines import pipeline
        from . import precision

        # the reduced-precision pass runs before fusion: its Casts fuse
        half = precision.half_dtype(options) is not None
        return pipeline("gpu", {"before_fusion": [precision] if half else []})

    def node_support(self, node: Node) -> bool | None:
        """Whether the gpu runs `node` (None: the input shapes of each plan decide)."""
        return support_decision(node, SUPPORT)

    def compile(self, graph: Graph, options: dict) -> GpuExecutable:
        from ...device import require_gpu
        from .precision import half_dtype

        blas = options.get("blas", "vendor")
        if blas not in ("vendor", "builtin"):
            raise ValueError(f"blas={blas!r}: accepted values are 'vendor' and 'builtin'")
        graphs = options.get("graphs", True)
        if not isinstance(graphs, bool):
            raise ValueError(f"graphs={graphs!r}: accepted values are True and False")
        channels_last = options.get("channels_last")
        if channels_last not in (None, True, False):
            raise ValueError(
                f"channels_last={channels_last!r}: accepted values are True, "
                "False and None (the default: where cuDNN runs Conv steps)"
            )
        half_dtype(options)  # validates fp16 / bf16 / fast_math
        fast_math = bool(options.get("fast_math", False))
        concurrency = max_concurrency(options, DEFAULT_MAX_CONCURRENCY)
        cache_size = plan_cache_size(options)
        shapes = ahead_shapes(options, list(graph.inputs))  # checked before the device
        device = gpu_device(options)  # checked before the device too
        verdict = require_gpu()
        check_device_exists(device)
        missing = unsupported_nodes(graph)
        # small integer inputs those nodes read (a window's size, a DFT's length): plans per
        # their values may make the nodes static (as on cpu)
        value_inputs = shape_deciding_inputs(graph, missing) if missing else []
        if missing and not value_inputs:
            raise LoweringError.missing("gpu", missing)
        tune = (
            "exhaustive"
            if options.get("exhaustive_tune")
            else "lookup"
            if options.get("tuning", True)
            else "off"
        )
        executable = GpuExecutable(
            graph,
            blas == "builtin",
            graphs=graphs,
            fast_math=fast_math,
            tune=tune,
            channels_last=channels_last,
            max_concurrency=concurrency,
            plan_cache_size=cache_size,
            value_inputs=value_inputs,
            device=device,
        )
        executable.precision = next((k for k in ("fp16", "bf16") if options.get(k)), "fp32")
        executable.arch = verdict.usable[0].arch if verdict.usable else None
        for signature in shapes:  # compile(..., shapes=[...]): built ahead
            executable.build_ahead(signature)
        return executable

    def unsupported_nodes(self, graph: Graph) -> list[Node]:
        """As compile decides before it lowers (the gpu lowering table; no device needed):
        a node that reads small integer inputs is left to the plans per their values."""
        return [n for n in unsupported_nodes(graph) if not shape_deciding_inputs(graph, [n])]


def unsupported_nodes(graph: Graph) -> list[Node]:
    """Nodes the gpu target cannot run; for a graph whose plans depend on input shapes or
    parameter values, or unroll its Loops / Scans (native/lower_loops.py), only whether a
    lowering exists (the rest is checked per plan)."""
    static = _static(graph.inputs) and not parameter_inputs(graph) and not holds_loops(graph)
    folded = set() if static else folded_when_specialized(graph)
    return [
        n
        for n in graph.nodes
        if n.op != "Constant" and n not in folded and not node_supported(n, SUPPORT, static)
    ]


def _runs(node: Node) -> bool:
    """Whether the gpu runs a node of static shapes (specialize decomposes the others)."""
    return node_supported(node, SUPPORT)


def lower_plan(graph: Graph, fast_math: bool = False, channels_last: bool = False) -> Plan:
    """The gpu plan of a graph with static shapes, after the gpu passes (no device needed).
    `fast_math`: float32 Gemm / Conv steps may use TF32 (their attribute fast_math=1).
    `channels_last`: half-precision convolutions run NHWC (conv_layout.py; needs cuDNN)."""
    nodes = [n for n in graph.nodes if n.op != "Constant"]
    for node in nodes:
        if not node_supported(node, SUPPORT):
            detail = refusal_detail(node, "no kernel, or an attribute, dtype or shape it refuses")
            raise LoweringError.missing("gpu", [node], detail)
    ctx = LoweringContext(
        nodes, list(graph.inputs), list(graph.outputs), LOWERINGS, channels_last=False, target="gpu"
    )
    ctx.conv_channels_last = channels_last
    plan = ctx.lower_all()
    if fast_math:
        for step in plan.steps:
            if step.kernel in ("Gemm", "Conv"):
                step.attrs["fast_math"] = 1
    return plan


def channels_last_default() -> bool:
    """Half-precision convolutions run NHWC where cuDNN runs Conv steps (NVIDIA builds with
    cuDNN loadable), unless GRAPHKILN_GPU_NHWC=0."""
    import os

    from ..._native import load_core

    if os.environ.get("GRAPHKILN_GPU_NHWC", "") == "0":
        return False
    status = getattr(load_core(), "gpu_cudnn_status", None)
    return bool(status) and status() == "cudnn"


class GpuPlan:
    """One plan built on the device for one set of input shapes; its executor runs up to
    `max_concurrency` runs at once (one execution context each)."""

    def __init__(
        self,
        graph: Graph,
        builtin_blas: bool,
        graphs: bool = True,
        fast_math: bool = False,
        tune: str = "lookup",
        channels_last: bool | None = None,
        max_concurrency: int = 1,
        device: int = -1,
    ):
        from ..._native import load_core
        from ...tuning.gpu import tune_plan

        if channels_last is None:
            channels_last = channels_last_default()
        plan = lower_plan(graph, fast_math, channels_last)

        def specs(slots):
            return [(plan.slots[s].dtype.numpy, list(plan.slots[s].dims)) for s in slots]

        # the tuner's trial executors run one at a time: one context each
        def build(p: Plan, use_graphs: bool = False, contexts: int = 1):
            return load_core().GpuExecutor(
                p.executor_steps(),
                p.constants,
                p.arena_bytes,
                specs(p.input_slots),
                specs(p.output_slots),
                builtin_blas,
                use_graphs,
                contexts,
                device,
            )

        self.input_dtypes = [v.type.dtype.numpy for v in graph.inputs]
        self.tuning = tune_plan(plan, tune, build)  # sets tuned kernel variants on the plan
        self.executor = build(plan, graphs, max_concurrency)
        self.plan = plan
        self.bounded, self.num_outputs = plan_outputs(plan, graph)


def plan_outputs(plan: Plan, graph: Graph) -> tuple[list, int]:
    """How a plan's outputs are cut after a run (native/bounded.py: outputs whose dims the run
    decides, and the hidden length outputs after the graph's) and how many the graph has."""
    return bounded_outputs(plan.executor_steps()), len(graph.outputs)


def finish_outputs(plan, outputs: list) -> list:
    """A run's outputs as the graph returns them: bounded ones cut, hidden ones dropped
    (plans that set no `bounded` / `num_outputs`, as tests' stand-ins, are returned as run)."""
    bounded = getattr(plan, "bounded", [])
    return cut_bounded(list(outputs), bounded)[: getattr(plan, "num_outputs", None)]


class GpuExecutable(Executable):
    def __init__(
        self,
        graph: Graph,
        builtin_blas: bool = False,
        plan_factory=None,
        graphs: bool = True,
        fast_math: bool = False,
        tune: str = "lookup",
        channels_last: bool | None = None,
        max_concurrency: int = 1,
        plan_cache_size: int = MAX_PLANS,
        value_inputs: list[int] | None = None,
        device: int = -1,
    ):
        """`plan_factory(graph, builtin_blas)` builds a plan (default GpuPlan: on the device,
        replayed as a graph when `graphs`, up to `max_concurrency` runs at once; tests pass a
        numpy model of the kernels)."""
        self.graph = graph
        self.builtin_blas = builtin_blas
        self.max_concurrency = max_concurrency
        self.plan_factory = plan_factory or (
            lambda g, b: GpuPlan(
                g,
                b,
                graphs,
                fast_math,
                tune,
                channels_last,
                max_concurrency=max_concurrency,
                device=device,
            )
        )
        self.fast_math = fast_math
        self.precision = "fp32"  # or the half type of the options fp16 / bf16 (compile sets it)
        # inputs whose values key the plans: those read only as parameters, and those that
        # decide whether a node runs (compile: native/specialize.shape_deciding_inputs)
        self.parameters = sorted(set(parameter_inputs(graph)) | set(value_inputs or ()))
        self._plans = PlanCache(plan_cache_size)
        if _static(graph.inputs) and not self.parameters:
            self._plan(tuple(static_dims(v) for v in graph.inputs), {})

    def _plan(self, shapes: tuple, values: dict) -> GpuPlan:
        """The plan of these input shapes and parameter values, built on first use (once,
        however many threads ask); the caller holds it for the length of its run."""
        key = (shapes, tuple((i, v.tobytes()) for i, v in sorted(values.items())))

        def build() -> GpuPlan:
            if values:
                graph = specialize_values(self.graph, shapes, values, _runs)
            else:  # the graph itself where it is static and holds no Loop / Scan to unroll
                graph = plan_graph(self.graph, shapes, None, _runs)
            return self.plan_factory(graph, self.builtin_blas)

        return self._plans.get(key, build)

    def build_ahead(self, shapes: tuple) -> None:
        """Build the plan of one input shape signature now (compile's `shapes` option, and
        a loaded program's saved plan shapes); one already built is only marked as used."""
        if self.parameters:
            names = [self.graph.inputs[i].name for i in self.parameters]
            raise LoweringError(
                f"shapes: this program's plans depend on the values of input(s) "
                f"{names} (read as kernel parameters), so they are built "
                "when it runs; compile it without `shapes`"
            )
        self._plan(tuple(tuple(int(d) for d in shape) for shape in shapes), {})

    def plan_shapes(self) -> list[tuple]:
        """The input shape signatures of the plans built so far, least recently used first,
        as a saved program keeps them (serialize/gpu_plan.py): [] for a graph of static
        inputs (its one plan is built whenever it loads) and where plans are keyed by
        parameter values too (rebuilt when runs meet those values)."""
        if self.parameters or _static(self.graph.inputs):
            return []
        return [shapes for shapes, values in self._plans.keys() if not values]

    def run(self, inputs) -> list:
        """numpy arrays, or device arrays (__cuda_array_interface__ / __dlpack__) read in
        place; returns numpy arrays."""
        plan, arrays = self._plan_and_arrays(inputs)
        return finish_outputs(plan, plan.executor.run(arrays))

    def run_on_device(self, inputs) -> list:
        """As run, the outputs left on the GPU: graphkiln DeviceArray objects (no copy to
        the host; `__cuda_array_interface__`, `__dlpack__`, `.numpy()`)."""
        plan, arrays = self._plan_and_arrays(inputs)
        if getattr(plan, "bounded", None):
            raise ValueError(
                "outputs='device': this plan has outputs whose size the run decides "
                "(NonMaxSuppression, Unique, Compress, NonZero), cut on the host; run it "
                "with outputs='numpy'"
            )
        return list(plan.executor.run(arrays, True))[: plan.num_outputs]

    def run_into(self, inputs, outputs: list) -> None:
        """As run, the outputs written into `outputs`: device arrays of the outputs' shapes
        and dtypes (C order) that the caller keeps and passes again and again (a binding, as
        onnxruntime's IOBinding); with device inputs nothing goes through the host and graph
        replay stays on."""
        plan, arrays = self._plan_and_arrays(inputs)
        if getattr(plan, "bounded", None):
            raise ValueError(
                "run_into: this plan has outputs whose size the run decides "
                "(NonMaxSuppression, Unique, Compress, NonZero); use run()"
            )
        plan.executor.run_into(arrays, list(outputs))

    def profile(self, inputs) -> list[tuple[str, float]]:
        """One run kernel by kernel, each step timed on the device: [(step, ms)]."""
        plan, arrays = self._plan_and_arrays(inputs)
        return plan.executor.profile(arrays)

    def _plan_and_arrays(self, inputs):
        values = {i: np.asarray(inputs[i]) for i in self.parameters}
        rest = [a for i, a in enumerate(inputs) if i not in values]
        shapes = tuple(tuple(int(d) for d in _shape(a)) for a in rest)
        plan = self._plan(shapes, values)
        # np.asarray keeps rank 0 (np.ascontiguousarray would make it rank 1)
        arrays = [
            a if _on_device(a) else np.asarray(a, dtype=dt, order="C")
            for a, dt in zip(rest, plan.input_dtypes)
        ]
        return plan, arrays

    def print_plan(self, file=None) -> None:
        """Print the plans built so far (plan_print.py), one per input shape signature (and
        parameter values), least recently used first."""
        import sys

        from ..native.plan_print import format_plan, format_plans

        entries = [
            (shapes, bool(values), [format_plan(plan.plan)])
            for (shapes, values), plan in self._plans.items()
        ]
        names = [v.name for i, v in enumerate(self.graph.inputs) if i not in self.parameters]
        print(format_plans(names, entries), file=file or sys.stdout)

    def plan_summary(self) -> dict:
        """What the plans built so far hold (the most recently used one's figures):
        `contexts` is how many execution contexts it made (at most `max_concurrency`),
        `context_bytes` the device bytes of all of them together (as on cpu), `device_bytes`
        that plus the constants (held once)."""
        plans = self._plans.values()
        out = {
            "plans": len(plans),
            "precision": self.precision,
            "fast_math": self.fast_math,
            "max_concurrency": self.max_concurrency,
        }
        for plan in plans:
            executor = plan.executor
            out.update(
                steps=executor.num_steps,
                arena_bytes=executor.arena_bytes,
                naive_bytes=getattr(getattr(plan, "plan", None), "naive_bytes", None),
                device_bytes=executor.device_bytes,
                blas=executor.blas,
                device=executor.device,
                graph=getattr(executor, "graph_state", "n/a"),
                contexts=getattr(executor, "contexts_created", 1),
                context_bytes=(
                    getattr(executor, "contexts_created", 1)
                    * getattr(executor, "bytes_per_context", 0)
                ),
                tuning=getattr(plan, "tuning", None),
                # steps a cpu kernel runs on the host (host_steps.py); none: all on the device
                host_steps=_host_steps(getattr(plan, "plan", None)),
                device_id=getattr(executor, "device_id", None),
            )
        if not any(hasattr(p.executor, "graph_state") for p in plans):
            return out  # no plan yet, or emulated plans (tests): no device to ask
        from ..._native import load_core

        status = getattr(load_core(), "gpu_jit_status", None)
        out["jit"] = status() if status else "n/a"
        return out


def gpu_device(options: dict) -> int:
    """The `device` option, else GRAPHKILN_GPU_DEVICE, else -1 (the current device)."""
    from ... import env

    value = options.get("device")
    where = "device"
    if value is None and (env.get("GRAPHKILN_GPU_DEVICE") or "").strip():
        value, where = env.get("GRAPHKILN_GPU_DEVICE").strip(), "GRAPHKILN_GPU_DEVICE"
        try:
            value = int(value)
        except ValueError:
            raise ValueError(
                f"{where}={value!r}: accepted values are GPU numbers 0, 1, ..."
            ) from None
    if value is None:
        return -1
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{where}={value!r}: accepted values are GPU numbers 0, 1, ...")
    return int(value)


def check_device_exists(device: int) -> None:
    """A ValueError naming the GPUs there are when `device` is not one of them."""
    if device < 0:
        return
    from ..._native import load_core

    count = int(load_core().gpu_probe_info().get("device_count", 0))
    if device >= count:
        have = (
            "no GPU"
            if count == 0
            else "one GPU, device 0"
            if count == 1
            else f"{count} GPUs, devices 0 to {count - 1}"
        )
        raise ValueError(f"device={device}: GPU {device} does not exist; this machine has {have}")


def _host_steps(plan) -> int | None:
    if plan is None:
        return None
    return sum(step.kernel.startswith(HOST_STEP_PREFIX) for step in plan.steps)


def _on_device(a) -> bool:
    return not isinstance(a, np.ndarray) and (
        hasattr(a, "__cuda_array_interface__") or hasattr(a, "__dlpack_device__")
    )


def _shape(a):
    return a.shape if hasattr(a, "shape") else np.shape(a)


def _static(values: list[Value]) -> bool:
    return all(
        isinstance(v.type, TensorType)
        and v.type.dims is not None
        and all(isinstance(d, int) for d in v.type.dims)
        for v in values
    )
