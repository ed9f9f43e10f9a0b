# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Program: a graph plus, once compiled, the executable of one target."""

from __future__ import annotations

import time

import numpy as np

from .errors import GraphkilnError
from .ir import Graph, OptionalType, SequenceType, TensorType, ValueType, print_graph
from .targets import Executable, Target, get_target


class Program:
    """An imported model. `compile(target)` prepares it to `run(feeds)`."""

    def __init__(self, graph: Graph):
        self.graph = graph  # as imported
        self.compiled_graph: Graph | None = None  # after the target's passes
        self.target: Target | None = None
        self.options: dict = {}
        self.pass_records: list = []
        self.compile_ms = 0.0
        self._executable: Executable | None = None

    # -- compiling ----------------------------------------------------------------------
    def compile(
        self, target="ref", *, trace: bool | None = None, verify_passes: bool = False, **options
    ) -> Program:
        """Compile for `target` (a name or a Target): run its pass pipeline on a copy of the
        graph, then lower it. `trace=True` prints the IR after each pass (default: the
        GRAPHKILN_TRACE_COMPILE variable); `verify_passes=True` runs ref after every pass on
        random inputs and raises CompileError naming the first pass that changes a result.
        Returns self."""
        from .compiler import compile_graph

        target = get_target(target)
        options = {**target.defaults, **options}
        target.check_options(options)
        start = time.perf_counter()
        graph, records = compile_graph(self.graph, target, options, trace, verify_passes)
        self._executable = target.compile(graph, dict(options))
        self.compile_ms = (time.perf_counter() - start) * 1e3
        self.compiled_graph, self.pass_records = graph, records
        self.target, self.options = target, dict(options)
        return self

    @property
    def is_compiled(self) -> bool:
        """Whether the program has an executable (compiled, or loaded compiled): run() works."""
        return self._executable is not None

    # -- running ------------------------------------------------------------------------
    def run(self, feeds: dict, outputs: str = "numpy") -> list:
        """Run once. `feeds` maps every parameter name to a numpy array of its type (any
        memory order or strides; a rank-0 parameter also takes a Python or numpy scalar; on
        `gpu` also a device array: `__cuda_array_interface__` / `__dlpack__`, read in place).
        `outputs="device"` (gpu): the outputs stay on the GPU as graphkiln._core.DeviceArray
        objects (`__cuda_array_interface__`, `__dlpack__`: CuPy / PyTorch take them without
        a copy; `.numpy()` copies one to the host); the default "numpy" returns numpy arrays.
        A symbolic dim (`f32[batch,3]`) takes any size, the same wherever its symbol appears;
        a static one must match. Raises ValueError for missing / unknown names, dtypes and
        shapes (naming the input, the dim, its symbol and what set it), TypeError for
        values that are not arrays, each message saying what was expected. Returns one array
        per output, the caller's to keep or change (never shared with other runs).

        Threads: a compiled program may be run from several threads at once, on every
        target, and results never depend on who else runs. On `ref` each run keeps its values
        to itself; on `cpu` and `gpu` each run takes an execution context (arena, scratch,
        staging buffers, on gpu a stream and its graph) from the program's pool, at most
        `max_concurrency` at once (a compile option; callers beyond it wait). What runs
        share (the plan, constants, packed weights) is read-only. README.md, "Threads"."""
        if self._executable is None:
            from .targets.registry import available_targets, default_target

            raise GraphkilnError(
                f"the program is not compiled: call program.compile({default_target()!r}) "
                f"before run() (targets: {', '.join(available_targets())}; 'ref' is the "
                "numpy oracle, the slowest)"
            )
        if outputs not in ("numpy", "device"):
            raise ValueError(f"outputs={outputs!r}: accepted values are 'numpy' and 'device'")
        inputs = check_feeds(self.graph, feeds)
        if not hasattr(self._executable, "run_on_device"):
            _refuse_device_inputs(self.graph, inputs, self.target.name)
        if outputs == "numpy":
            return self._executable.run(inputs)
        run_on_device = getattr(self._executable, "run_on_device", None)
        if run_on_device is None:
            raise ValueError(
                f"outputs='device': the {self.target.name} target returns numpy arrays; "
                "outputs on the device need the gpu target"
            )
        return run_on_device(inputs)

    def run_into(self, feeds: dict, outputs) -> None:
        """Run once, writing the outputs into `outputs` (gpu): device arrays
        (`__cuda_array_interface__` / `__dlpack__`: PyTorch, CuPy, DeviceArray) of the output
        shapes and dtypes, C-contiguous, one per output in `get_output_names()` order or as
        {name: array}. For repeated calls into fixed buffers (onnxruntime's IOBinding): with
        device inputs too, a run copies nothing through the host and replays its graph."""
        if self._executable is None:
            self.run(feeds)  # the "not compiled" error
        run_into = getattr(self._executable, "run_into", None)
        if run_into is None:
            raise ValueError(
                f"run_into: the {self.target.name} target returns numpy arrays; writing into "
                "device arrays needs the gpu target"
            )
        names = self.get_output_names()
        if isinstance(outputs, dict):
            unknown = sorted(set(outputs) - set(names))
            missing = [n for n in names if n not in outputs]
            if unknown or missing:
                raise ValueError(
                    f"run_into: outputs must name every output ({', '.join(names)}); "
                    + (f"unknown: {', '.join(unknown)}; " if unknown else "")
                    + (f"missing: {', '.join(missing)}" if missing else "")
                )
            outputs = [outputs[n] for n in names]
        run_into(check_feeds(self.graph, feeds), list(outputs))

    # -- introspection ------------------------------------------------------------------
    def get_parameter_names(self) -> list[str]:
        """The names of the inputs `run` takes, in order (initializers are not inputs)."""
        return [v.name for v in self.graph.inputs]

    def get_parameter_shapes(self) -> dict[str, ValueType]:
        """{input name: its type}, in order; a type prints as IR text (`f32[1,3,224,224]`,
        symbolic dims by name: `f32[batch,3,height,width]`; parse_onnx says how they are
        named)."""
        return {v.name: v.type for v in self.graph.inputs}

    def get_output_names(self) -> list[str]:
        """The names of the outputs, in the order `run` returns them."""
        return [v.name for v in self.graph.outputs]

    def get_output_shapes(self) -> list[ValueType]:
        """The outputs' types as imported, in the order `run` returns them (`[f32[1,10]]`)."""
        return [v.type for v in self.graph.outputs]

    def print(self, file=None, elide: bool = True) -> None:
        """Print the IR, compiled if compiled (large constants elided unless elide=False)."""
        print(print_graph(self.compiled_graph or self.graph, elide=elide), end="", file=file)

    def __str__(self) -> str:
        return print_graph(self.compiled_graph or self.graph, elide=True)

    def stats(self) -> dict:
        """Compile statistics: node and kernel counts, passes with times, and on cpu / gpu
        `plan` (the executable's plan_summary()). `arena_bytes` is the activation arena of
        the plan actually run (the one built or run last: Plan.place_arena's placement, the
        size each execution context allocates), `naive_bytes` what its arena buffers would
        take if none shared space; both None on ref (no plan), before a plan is built
        (symbolic input dims) and, for naive_bytes, for a plan loaded from a saved program."""
        from .compiler import compile_stats

        if self.compiled_graph is None:
            raise GraphkilnError("the program is not compiled")
        stats = compile_stats(self.graph, self.compiled_graph, self.pass_records, self.compile_ms)
        plan_summary = getattr(self._executable, "plan_summary", None)
        if plan_summary is not None:
            stats["plan"] = plan = plan_summary()
            stats["arena_bytes"] = plan.get("arena_bytes")
            stats["naive_bytes"] = plan.get("naive_bytes")
        return stats

    def print_plan(self, file=None) -> None:
        """Print the plans a cpu or gpu program built (steps, kernels, attributes, buffers,
        arena offsets: targets/native/plan_print.py), one per input shape signature, or say
        that none is built yet; other targets have no plans."""
        if self._executable is None:
            raise GraphkilnError("the program is not compiled")
        printer = getattr(self._executable, "print_plan", None)
        if printer is None:
            raise GraphkilnError(
                f"the {self.target.name} target makes no plans: print_plan() "
                "needs a program compiled for cpu or gpu"
            )
        printer(file=file)


def check_feeds(graph: Graph, feeds) -> list:
    """Validate `feeds` against the graph inputs; return them in input order. A static dim
    must match; a symbolic one takes any size, the same wherever the symbol appears (across
    inputs, in input order). Errors name the input, the axis, the symbol and what set it."""
    if not isinstance(feeds, dict):
        raise TypeError(f"feeds must be a dict of name -> numpy array, got {type(feeds).__name__}")
    names = [v.name for v in graph.inputs]
    missing = [n for n in names if n not in feeds]
    unknown = [n for n in feeds if n not in names]
    if missing or unknown:
        parts = []
        if missing:
            parts.append(f"missing {missing}")
        if unknown:
            parts.append(f"unknown {unknown}")
        raise ValueError(f"bad feeds: {'; '.join(parts)}; the program's inputs are {names}")
    bound: dict[str, tuple] = {}  # symbol -> (size, input, axis) of its first use
    return [_check_one(v.name, v.type, feeds[v.name], bound) for v in graph.inputs]


def _check_one(name: str, expected, data, bound: dict[str, tuple]):
    if isinstance(expected, OptionalType):
        return None if data is None else _check_one(name, expected.elem, data, bound)
    if isinstance(expected, SequenceType):
        if not isinstance(data, (list, tuple)):
            raise TypeError(
                f"input {name!r}: expected a list for {expected}, got {type(data).__name__}"
            )
        # elements may differ in shape: each binds the element type's symbols on its own
        return [
            _check_one(f"{name}[{i}]", expected.elem, x, dict(bound)) for i, x in enumerate(data)
        ]
    device = _device_array(data)
    if device is not None and isinstance(expected, TensorType):
        shape, dtype = device  # a GPU array (PyTorch, CuPy, DeviceArray): read in place
        want = expected.dtype.numpy
        if dtype is not None and dtype != want:
            raise ValueError(
                f"input {name!r}: expected dtype {expected.dtype.value} ({want}), got {dtype}"
            )
        if expected.dims is not None:
            _check_dims(name, expected, shape, bound)
        return data
    if isinstance(data, np.generic):  # a numpy scalar: a 0-d array of its own dtype
        data = np.asarray(data)
    elif not isinstance(data, np.ndarray):
        data = _python_scalar(name, expected, data)
    if isinstance(data, np.ma.MaskedArray):
        raise TypeError(
            f"input {name!r}: masked arrays are not supported (the mask would be "
            "ignored); pass array.filled(value)"
        )
    if not isinstance(expected, TensorType):
        return data
    want = expected.dtype.numpy
    if data.dtype != want and not (want == np.dtype(object) and data.dtype.kind in "OU"):
        raise ValueError(
            f"input {name!r}: expected dtype {expected.dtype.value} ({want}), got {data.dtype}"
        )
    if want == np.dtype(object) and data.dtype.kind == "O":
        wrong = next((x for x in data.flat if not isinstance(x, str)), None)
        if wrong is not None:
            raise TypeError(
                f"input {name!r}: expected str elements for {expected}, got an "
                f"element of type {type(wrong).__name__}"
            )
    if expected.dims is None:
        return data
    _check_dims(name, expected, tuple(data.shape), bound)
    return data


def _refuse_device_inputs(graph, inputs: list, target: str) -> None:
    """A TypeError naming the first GPU array fed to a target that reads host memory."""
    for v, data in zip(graph.inputs, inputs):
        if _device_array(data) is not None:
            raise TypeError(
                f"input {v.name!r} is a GPU array ({type(data).__name__}); the {target} "
                "target reads host arrays (numpy): copy it to the host, or compile for gpu"
            )


def _device_array(data) -> tuple[tuple, np.dtype | None] | None:
    """(shape, numpy dtype or None where only DLPack says it) of a GPU array, else None."""
    if isinstance(data, np.ndarray):
        return None
    cai = getattr(data, "__cuda_array_interface__", None)
    if isinstance(cai, dict) and "shape" in cai:
        try:
            dtype = np.dtype(cai.get("typestr"))
        except TypeError:
            dtype = None
        return tuple(int(d) for d in cai["shape"]), dtype
    where = getattr(data, "__dlpack_device__", None)
    if where is not None and hasattr(data, "__dlpack__") and hasattr(data, "shape"):
        kind, _ = where()
        if int(kind) in (2, 10):  # DLPack's CUDA and ROCm devices (the executor checks dtype)
            return tuple(int(d) for d in data.shape), None
    return None


def _check_dims(name: str, expected, shape: tuple, bound: dict[str, tuple]) -> None:
    if len(shape) != len(expected.dims):
        raise ValueError(
            f"input {name!r}: expected rank {len(expected.dims)} {expected}, "
            f"got shape {list(shape)}"
        )
    for axis, (want_dim, got) in enumerate(zip(expected.dims, shape)):
        if isinstance(want_dim, str):
            first = bound.setdefault(want_dim, (got, name, axis))
            if first[0] != got:
                _, where, at = first
                by = f"dim {at} of the same input" if where == name else f"input {where!r}"
                raise ValueError(
                    f"input {name!r}: dim {axis} is {want_dim!r}, which {by} set "
                    f"to {first[0]}; got {got} (shape {list(shape)}, "
                    f"expected {expected})"
                )
        elif want_dim != got:
            hint = (
                " (a dim declared 0 is an empty axis; if the model means 'any size' "
                "there, set it with parse_onnx(..., input_shapes=...))"
                if want_dim == 0
                else ""
            )
            raise ValueError(
                f"input {name!r}: dim {axis} is fixed at {want_dim}; got {got} "
                f"(shape {list(shape)}, expected {expected}){hint}"
            )


_SCALAR_KINDS = {bool: "b", int: "biuf", float: "fc", complex: "c", str: "OU"}


def _python_scalar(name: str, expected, data) -> np.ndarray:
    """A Python bool / int / float / complex / str fed to a rank-0 tensor parameter, as an
    array of the parameter's dtype when that loses nothing of its kind."""
    kinds = _SCALAR_KINDS.get(type(data))
    if (
        kinds is None
        or not isinstance(expected, TensorType)
        or expected.rank != 0
        or expected.dtype.numpy.kind not in kinds
    ):
        raise TypeError(
            f"input {name!r}: expected a numpy array of {expected}, got {type(data).__name__}"
        )
    want = expected.dtype.numpy
    try:
        # numpy before 2.0 wraps an int out of an integer dtype's range (with a warning):
        # check it here, so every numpy we support refuses it alike
        if (
            type(data) is int
            and want.kind in "iu"
            and not (np.iinfo(want).min <= data <= np.iinfo(want).max)
        ):
            raise OverflowError
        return np.asarray(data, dtype=want)
    except OverflowError:
        raise ValueError(f"input {name!r}: {data!r} does not fit {expected}") from None
