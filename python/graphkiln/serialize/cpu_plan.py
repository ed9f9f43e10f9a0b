# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The saved plan of a compiled cpu program (targets/cpu/saved_plan.py) in the document:

    "cpu_plan": {"key": {"isa": "avx512_core", "onednn": "3.2.0", "graphkiln": "0.1.0"},
                 "mac": hex HMAC-SHA256 of msgpack [key, segments] (plan_secret.py),
                 "segments": [SEGMENT]}                       (a graph of static inputs)
              | {"key", "mac": ... of msgpack [key, plans],
                 "plans": [{"shapes": [[dim]] one per graph input, "segments": [SEGMENT]}]}
                 (format version 3: the specializations of a graph with dynamic inputs,
                 each one plan segment from the graph's inputs to its outputs; packed
                 constants and plan constants that several share are stored once)
    SEGMENT = {"kind": "plan", "inputs": [id], "outputs": [id], "arena_bytes": n,
               "constants": [tensor], "input_specs": [SPEC], "output_specs": [SPEC],
               "steps": [STEP]}
            | {"kind": "ref", "nodes": [index into the compiled graph's nodes]}
    SPEC  = [dtype, dims]                               (IR dtype names)
    STEP  = {"kernel", "name", "attrs": [[name, code, value]], "inputs": [TENSOR | null],
             "outputs": [TENSOR], "packed"?: [[layout, tensor]]}
    TENSOR = [dtype, dims, strides, storage, index, byte offset]   (storage: 0 arena,
             1 constant, 2 input, 3 output; dtype: a name the C++ core knows)

ids are the compiled graph's value ids, tensors index the tensor table; attribute codes are
i (int), f (float), s (str), I (ints), F (floats), S (strs). A loader checks every field
(types, ranges, references, that each segment's inputs exist when it runs) and the C++
executor checks that every tensor lies inside its storage. The plan is used only where the
key equals this machine's and the MAC matches under this installation's secret (a plan from
elsewhere, or edited, is not trusted: kernels assume their arguments were made by the
lowering); otherwise the compiled graph is lowered again."""

from __future__ import annotations

import msgpack
import numpy as np

from ..errors import GraphError
from ..ir import DType, TensorType
from .checks import damaged, float_to_document, need_dict, need_float, need_int, need_list, need_str
from .limits import Limits
from .plan_secret import mac_matches, plan_mac, plan_secret

CORE_DTYPES = frozenset(
    ("f32", "f64", "f16", "bf16", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool")
)
MAX_OFFSET = 1 << 62
INT64 = (-(1 << 63), (1 << 63) - 1)  # the C++ core's attribute integers
KEY_FIELDS = ("isa", "onednn", "graphkiln")
_INT = frozenset((int,))
_STEP_REQUIRED = frozenset(("kernel", "name", "attrs", "inputs", "outputs"))
_STEP_FIELDS = _STEP_REQUIRED | {"packed"}


# -- writing ---------------------------------------------------------------------------------


def cpu_plan_document(executable, encoder, table) -> dict | None:
    """The saved plan of a cpu executable (its specializations for a graph with dynamic
    inputs), or None where it has none to save (plans per input value, none built yet) or
    a step attribute has a kind the format lacks."""
    from ..targets.cpu.saved_plan import SavedPlan, plan_key

    items = executable.saved_plan()
    specializations = None if items is not None else executable.saved_specializations()
    if items is None and not specializations:
        return None
    nodes = {node: index for index, node in enumerate(executable.graph.nodes)}
    shared = _SharedArrays(table)

    def segments_of(items):
        return [
            _plan_segment(item, encoder, shared)
            if isinstance(item, SavedPlan)
            else {"kind": "ref", "nodes": [nodes[n] for n in item]}
            for item in items
        ]

    try:
        if items is not None:
            field, body = "segments", segments_of(items)
        else:
            field = "plans"
            body = [
                {
                    "shapes": [[int(d) for d in shape] for shape in entry.shapes],
                    "segments": segments_of(entry.items),
                }
                for entry in specializations
            ]
    except (GraphError, KeyError, TypeError, ValueError):
        return None  # the loader lowers such a program again, as for one saved without a plan
    secret = plan_secret()
    if secret is None:  # a plan nobody could authenticate would never be used
        return None
    key = plan_key()
    return {"key": key, "mac": plan_mac(secret, _signed_bytes(key, body)), field: body}


class _SharedArrays:
    """The tensor table, adding an array whose bytes it already holds (the same memory, as
    packed constants shared between plans are, or equal content) only once."""

    def __init__(self, table):
        self.table = table
        self._by_memory: dict[tuple, int] = {}
        self._by_content: dict[tuple, int] = {}

    def add(self, array: np.ndarray) -> int:
        import hashlib

        array = np.asarray(array)
        memory = (
            array.__array_interface__["data"][0],
            array.nbytes,
            array.dtype.str,
            array.shape,
            array.strides,
        )
        index = self._by_memory.get(memory)
        if index is None:
            contiguous = np.ascontiguousarray(array)
            content = (
                array.dtype.str,
                array.shape,
                hashlib.blake2b(
                    memoryview(contiguous.view(np.uint8).reshape(-1)), digest_size=16
                ).digest(),
            )
            index = self._by_content.get(content)
            if index is None:
                index = self._by_content[content] = self.table.add(array)
            self._by_memory[memory] = index
        return index


def _signed_bytes(key: dict, segments: list) -> bytes:
    """What the MAC covers: the key and the segments, as msgpack (the same bytes for the
    document saved and the one a loader decodes, from either container)."""
    return msgpack.packb([key, segments], use_bin_type=True, unicode_errors="surrogatepass")


def _plan_segment(saved, encoder, table) -> dict:
    def ids(values):
        return [encoder.ids[v] for v in values]

    def spec(items):
        return [[dtype.value, [int(d) for d in dims]] for dtype, dims in items]

    steps = []
    for index, step in enumerate(saved.steps):
        doc = {
            "kernel": str(step["kernel"]),
            "name": str(step["name"]),
            "attrs": [_attribute(k, v) for k, v in step["attrs"].items()],
            "inputs": [None if t is None else _tensor(t) for t in step["inputs"]],
            "outputs": [_tensor(t) for t in step["outputs"]],
        }
        if saved.packed.get(index):
            doc["packed"] = [
                [str(layout), table.add(np.ascontiguousarray(array, np.uint8))]
                for layout, array in saved.packed[index]
            ]
        steps.append(doc)
    return {
        "kind": "plan",
        "inputs": ids(saved.inputs),
        "outputs": ids(saved.outputs),
        "arena_bytes": int(saved.arena_bytes),
        "constants": [table.add(np.asarray(c)) for c in saved.constants],
        "input_specs": spec(saved.input_specs),
        "output_specs": spec(saved.output_specs),
        "steps": steps,
    }


def _tensor(arg: dict) -> list:
    storage, index, offset = arg["ref"]
    return [
        str(arg["dtype"]),
        [int(d) for d in arg["dims"]],
        [int(s) for s in arg["strides"]],
        int(storage),
        int(index),
        int(offset),
    ]


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer))  # bool too: the core reads it as an int


def _attribute(name: str, value) -> list:
    """[name, code, value] with the code of the C++ type the executor binding makes of it."""
    if _is_int(value):
        return [str(name), "i", int(value)]
    if isinstance(value, (float, np.floating)):
        return [str(name), "f", float_to_document(value)]
    if isinstance(value, str):
        return [str(name), "s", value]
    if isinstance(value, (list, tuple, np.ndarray)):
        items = value.tolist() if isinstance(value, np.ndarray) else list(value)
        if all(_is_int(x) for x in items):
            return [str(name), "I", [int(x) for x in items]]
        if all(_is_int(x) or isinstance(x, (float, np.floating)) for x in items):
            return [str(name), "F", [float_to_document(x) for x in items]]
        if all(isinstance(x, str) for x in items):
            return [str(name), "S", items]
    raise GraphError(f"step attribute {name!r} = {value!r:.60} has no saved form")


# -- reading ---------------------------------------------------------------------------------


def read_cpu_plan(obj, graph, values: list, tensors: list, limits: Limits) -> list | None:
    """The saved plan as targets/cpu/saved_plan.py data, or None when its key differs from
    this machine's (the caller lowers the graph again). Damage raises FormatError."""
    from ..targets.cpu.saved_plan import plan_key

    where = "compiled.cpu_plan"
    if isinstance(obj, dict) and "plans" in obj:
        need_dict(obj, where, ("key", "mac", "plans"))
    else:
        need_dict(obj, where, ("key", "mac", "segments"))
    key = need_dict(obj["key"], f"{where}.key", KEY_FIELDS)
    for name in KEY_FIELDS:
        need_str(key[name], f"{where}.key.{name}", limits)
    mac = need_str(obj["mac"], f"{where}.mac", limits)
    reader = _PlanReader(graph, values, tensors, limits)
    if "plans" in obj:
        field = "plans"
        items = [
            _specialization(reader, graph, item, f"{where}.plans[{n}]", limits)
            for n, item in enumerate(need_list(obj["plans"], f"{where}.plans", limits))
        ]
        shapes = [entry.shapes for entry in items]
        if len(set(shapes)) != len(shapes):
            raise damaged(f"{where}.plans", "two plans for the same input shapes")
    else:
        field = "segments"
        items = [
            reader.segment(item, f"{where}.segments[{i}]")
            for i, item in enumerate(need_list(obj["segments"], f"{where}.segments", limits))
        ]
        reader.check_outputs(f"{where}.segments")
    if key != plan_key():  # packed for another ISA or library: lowered again
        return None
    try:
        signed = _signed_bytes(key, obj[field])
    except (TypeError, ValueError, OverflowError):
        raise damaged(f"{where}.{field}", "cannot be encoded again") from None
    if not mac_matches(plan_secret(), signed, mac):  # not saved here: trusted by nothing
        return None
    return items


def _specialization(reader, graph, obj, where: str, limits: Limits):
    """One saved specialization: its input shapes, checked against the graph's inputs, and
    its one plan segment, which takes the graph's inputs and makes its outputs."""
    from ..targets.cpu.saved_plan import SavedPlan, SavedSpecialization

    need_dict(obj, where, ("shapes", "segments"))
    shapes = []
    for i, value in enumerate(
        need_list(obj["shapes"], f"{where}.shapes", limits, len(graph.inputs))
    ):
        dims = tuple(reader.dims(value, f"{where}.shapes[{i}]", 0))
        t = graph.inputs[i].type
        if (
            isinstance(t, TensorType)
            and t.dims is not None
            and (
                len(t.dims) != len(dims)
                or any(isinstance(want, int) and want != got for want, got in zip(t.dims, dims))
            )
        ):
            raise damaged(
                f"{where}.shapes[{i}]",
                f"shape {list(dims)[:8]} does not fit input {graph.inputs[i].name[:40]!r} ({t})",
            )
        shapes.append(dims)
    reader.available = set(graph.inputs)
    segments = need_list(obj["segments"], f"{where}.segments", limits, 1)
    plan = reader.segment(segments[0], f"{where}.segments[0]")
    if (
        not isinstance(plan, SavedPlan)
        or plan.inputs != list(graph.inputs)
        or plan.outputs != list(graph.outputs)
    ):
        raise damaged(
            f"{where}.segments[0]",
            "a specialization's plan must take the graph's inputs and make its outputs",
        )
    for i, ((_, dims), shape) in enumerate(zip(plan.input_specs, shapes)):
        if tuple(dims) != shape:
            raise damaged(
                f"{where}.segments[0].input_specs[{i}]",
                f"{list(dims)[:8]} differs from the plan's shapes[{i}]",
            )
    return SavedSpecialization(tuple(shapes), [plan])


class _PlanReader:
    def __init__(self, graph, values: list, tensors: list, limits: Limits):
        self.graph, self.values, self.tensors, self.limits = graph, values, tensors, limits
        self.top_level = set(graph.inputs)
        for node in graph.nodes:
            self.top_level.update(v for v in node.outputs if v is not None)
        self.available = set(graph.inputs)  # the values the segments so far make

    def segment(self, obj, where: str):
        if isinstance(obj, dict) and obj.get("kind") == "ref":
            return self.ref_segment(obj, where)
        need_dict(
            obj,
            where,
            (
                "kind",
                "inputs",
                "outputs",
                "arena_bytes",
                "constants",
                "input_specs",
                "output_specs",
                "steps",
            ),
        )
        if obj["kind"] != "plan":
            raise damaged(f"{where}.kind", "expected 'plan' or 'ref'")
        from ..targets.cpu.saved_plan import SavedPlan

        inputs = self.value_list(obj["inputs"], f"{where}.inputs")
        for i, value in enumerate(inputs):
            if value not in self.available:
                raise damaged(
                    f"{where}.inputs[{i}]", f"%{value.name[:40]} is not made before this segment"
                )
        outputs = self.value_list(obj["outputs"], f"{where}.outputs")
        constants = [
            self.array(t, f"{where}.constants[{i}]")
            for i, t in enumerate(need_list(obj["constants"], f"{where}.constants", self.limits))
        ]
        saved = SavedPlan(
            inputs,
            outputs,
            [],
            constants,
            need_int(obj["arena_bytes"], f"{where}.arena_bytes", 0, MAX_OFFSET),
            self.specs(obj["input_specs"], f"{where}.input_specs", len(inputs)),
            self.output_specs(obj["output_specs"], f"{where}.output_specs", len(outputs)),
        )
        for i, step in enumerate(need_list(obj["steps"], f"{where}.steps", self.limits)):
            self.step(step, f"{where}.steps[{i}]", saved)
        self.available.update(outputs)
        return saved

    def ref_segment(self, obj, where: str) -> list:
        need_dict(obj, where, ("kind", "nodes"))
        nodes = []
        count = len(self.graph.nodes)
        for i, index in enumerate(need_list(obj["nodes"], f"{where}.nodes", self.limits)):
            node = self.graph.nodes[need_int(index, f"{where}.nodes[{i}]", 0, count - 1)]
            for value in node.inputs:
                if value is not None and value not in self.available and value.constant is None:
                    raise damaged(
                        f"{where}.nodes[{i}]",
                        f"input %{value.name[:40]} is not made before this node",
                    )
            self.available.update(v for v in node.outputs if v is not None)
            nodes.append(node)
        return nodes

    def check_outputs(self, where: str) -> None:
        for value in self.graph.outputs:
            if value not in self.available and value.constant is None:
                raise damaged(where, f"no segment makes graph output %{value.name[:40]}")

    def value_list(self, obj, where: str) -> list:
        out = []
        for i, ref in enumerate(need_list(obj, where, self.limits)):
            value = self.values[need_int(ref, f"{where}[{i}]", 0, len(self.values) - 1)]
            if value not in self.top_level or not isinstance(value.type, TensorType):
                raise damaged(f"{where}[{i}]", "not a tensor value of the compiled graph")
            out.append(value)
        return out

    def array(self, ref, where: str) -> np.ndarray:
        array = self.tensors[need_int(ref, where, 0, len(self.tensors) - 1)]
        if array.dtype == object:
            raise damaged(where, "a plan constant cannot be a string tensor")
        return array

    def dims(self, obj, where: str, low: int) -> list:
        items = need_list(obj, where, self.limits)
        if len(items) > self.limits.max_rank:
            raise damaged(where, f"rank {len(items)} is over the limit {self.limits.max_rank}")
        for i, d in enumerate(items):
            need_int(d, f"{where}[{i}]", low, self.limits.max_dim)
        return items

    def specs(self, obj, where: str, count: int) -> list:
        out = []
        for i, item in enumerate(need_list(obj, where, self.limits, count)):
            need_list(item, f"{where}[{i}]", self.limits, 2)
            name = need_str(item[0], f"{where}[{i}][0]", self.limits)
            try:
                dtype = DType(name)
            except ValueError:
                raise damaged(f"{where}[{i}][0]", f"unknown dtype {name[:20]!r}") from None
            out.append((dtype, self.dims(item[1], f"{where}[{i}][1]", 0)))
        return out

    def output_specs(self, obj, where: str, count: int) -> list:
        """A segment's output specs: its outputs', then the i64 [1] counts of its counted
        kernels (LoweringContext.run_count), hidden outputs after them."""
        extra = len(obj) - count if isinstance(obj, list) else 0
        specs = self.specs(obj, where, count + max(extra, 0))
        for i, (dtype, dims) in enumerate(specs[count:], count):
            if dtype != DType.i64 or list(dims) != [1]:
                raise damaged(f"{where}[{i}]", "a hidden count output must be i64 [1]")
        return specs

    def quick_tensor(self, obj) -> dict | None:
        """The common case, checked without building messages: None where anything is off
        (then tensor() says what)."""
        if type(obj) is not list or len(obj) != 6:
            return None
        dtype, dims, strides, storage, index, offset = obj
        top = self.limits.max_dim
        if (
            type(dtype) is str
            and dtype in CORE_DTYPES
            and type(dims) is list
            and type(strides) is list
            and len(dims) == len(strides) <= self.limits.max_rank
            and set(map(type, dims)) <= _INT
            and set(map(type, strides)) <= _INT
            and (
                not dims
                or (
                    min(dims) >= 0
                    and max(dims) <= top
                    and min(strides) >= -top
                    and max(strides) <= top
                )
            )
            and type(storage) is int
            and 0 <= storage <= 3
            and type(index) is int
            and 0 <= index <= MAX_OFFSET
            and type(offset) is int
            and 0 <= offset <= MAX_OFFSET
        ):
            return {
                "dtype": dtype,
                "dims": dims,
                "strides": strides,
                "ref": (storage, index, offset),
            }
        return None

    def tensor(self, obj, where: str) -> dict:
        need_list(obj, where, self.limits, 6)
        dtype = need_str(obj[0], f"{where}[0]", self.limits)
        if dtype not in CORE_DTYPES:
            raise damaged(f"{where}[0]", f"{dtype[:20]!r} is not an element type of the cpu core")
        dims = self.dims(obj[1], f"{where}[1]", 0)
        strides = self.dims(obj[2], f"{where}[2]", -self.limits.max_dim)
        if len(strides) != len(dims):
            raise damaged(where, "strides and dims differ in number")
        ref = (
            need_int(obj[3], f"{where}[3]", 0, 3),
            need_int(obj[4], f"{where}[4]", 0, MAX_OFFSET),
            need_int(obj[5], f"{where}[5]", 0, MAX_OFFSET),
        )
        return {"dtype": dtype, "dims": dims, "strides": strides, "ref": ref}

    def tensor_list(self, obj, where: str, optional: bool) -> list:
        out = []
        quick = self.quick_tensor
        for i, t in enumerate(need_list(obj, where, self.limits)):
            if t is None and optional:
                out.append(None)
            else:
                out.append(quick(t) or self.tensor(t, f"{where}[{i}]"))
        return out

    def step(self, obj, where: str, saved) -> None:
        if not (type(obj) is dict and _STEP_REQUIRED <= obj.keys() <= _STEP_FIELDS):
            need_dict(obj, where, ("kernel", "name", "attrs", "inputs", "outputs"), ("packed",))
        attrs = {}
        for i, item in enumerate(need_list(obj["attrs"], f"{where}.attrs", self.limits)):
            name, value = self.attribute(item, where, i)
            if name in attrs:
                raise damaged(f"{where}.attrs[{i}]", f"attribute {name[:40]!r} given twice")
            attrs[name] = value
        saved.steps.append(
            {
                "kernel": need_str(obj["kernel"], f"{where}.kernel", self.limits),
                "name": need_str(obj["name"], f"{where}.name", self.limits),
                "attrs": attrs,
                "inputs": self.tensor_list(obj["inputs"], f"{where}.inputs", True),
                "outputs": self.tensor_list(obj["outputs"], f"{where}.outputs", False),
            }
        )
        if "packed" in obj:
            packed = []
            for i, item in enumerate(need_list(obj["packed"], f"{where}.packed", self.limits)):
                at = f"{where}.packed[{i}]"
                need_list(item, at, self.limits, 2)
                layout = need_str(item[0], f"{at}[0]", self.limits)
                array = self.array(item[1], f"{at}[1]")
                if array.dtype != np.uint8 or array.ndim != 1:
                    raise damaged(f"{at}[1]", "packed bytes must be a 1-D u8 tensor")
                packed.append((layout, array))
            saved.packed[len(saved.steps) - 1] = packed

    def attribute(self, item, step_where: str, index: int) -> tuple:
        if type(item) is list and len(item) == 3 and type(item[0]) is str:  # the common case
            name, code, raw = item
            low, high = INT64
            if len(name) > self.limits.max_string_bytes:
                pass
            elif code == "I" and type(raw) is list and len(raw) <= self.limits.max_list_length:
                if set(map(type, raw)) <= _INT and (
                    not raw or (min(raw) >= low and max(raw) <= high)
                ):
                    return name, raw
            elif code == "i" and type(raw) is int and low <= raw <= high:
                return name, raw
            elif code == "f" and type(raw) is float:
                return name, raw
            elif code == "s" and type(raw) is str and len(raw) <= self.limits.max_string_bytes:
                return name, raw
        where = f"{step_where}.attrs[{index}]"
        need_list(item, where, self.limits, 3)
        name = need_str(item[0], f"{where}[0]", self.limits)
        code, raw = item[1], item[2]
        if code == "i":
            return name, need_int(raw, f"{where}[2]", *INT64)
        if code == "f":
            return name, need_float(raw, f"{where}[2]")
        if code == "s":
            return name, need_str(raw, f"{where}[2]", self.limits)
        items = need_list(raw, f"{where}[2]", self.limits) if code in ("I", "F", "S") else None
        if code == "I":
            return name, [need_int(x, f"{where}[2][{i}]", *INT64) for i, x in enumerate(items)]
        if code == "F":
            return name, [need_float(x, f"{where}[2][{i}]") for i, x in enumerate(items)]
        if code == "S":
            return name, [need_str(x, f"{where}[2][{i}]", self.limits) for i, x in enumerate(items)]
        raise damaged(f"{where}[1]", f"unknown attribute code {str(code)[:10]!r} (i f s I F S)")
