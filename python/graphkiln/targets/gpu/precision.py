# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The gpu target's reduced-precision pass (options fp16=True / bf16=True): float32 work in
float16 or bfloat16, accumulation in float32, numerically sensitive ops in float32.

Policy, node by node in execution order (run before the fusion passes, so the Casts it
inserts fuse into the neighbouring pointwise kernels):
- anchors (Conv, ConvTranspose, MatMul, Gemm, Attention) always run in half: their float32
  inputs are cast (constants converted once, at compile time; a constant that would
  overflow stays float32, which Attention takes for its mask); the GPU kernels accumulate
  in float32 (cuBLAS compute type 32F, the builtin GEMM, direct kernels) and round once
  (Attention: scores, softmax and P V in float32, the output rounded once);
- FP32_OPS (sums and products over many elements that could overflow half: ReduceSum,
  ReduceSumSquare, ReduceL1 / L2, ReduceProd, ReduceLogSum(Exp); Exp, Log, Pow,
  Reciprocal, cumulative sums, Instance / Group / Batch / Lp normalization, losses,
  CastLike) always run in float32: a half input is cast back first;
- normalizations and softmax (LayerNormalization, RMSNormalization, Softmax, LogSoftmax)
  and ReduceMean / Max / Min, global average / max pooling follow their inputs like the ops
  below, with kernels that read and write half but keep their statistics, exponentials
  and sums in float32;
- any other op follows its inputs: half when every non-constant float input is already
  half (or it reads only constants), float32 when one is float32 (mixing promotes, as in
  PyTorch autocast). A follow op reading a float32 constant that would overflow or flush
  to zero in the half type (an attention mask of -3.4e38, an epsilon of 1e-12 in
  float16) stays in float32;
- a node whose gpu lowering refuses the half types (no half kernel) stays in float32, so the
  result is always compilable;
- Cast, Shape and Size read a half value as it is (widening is exact);
- graph inputs and outputs keep their float32 types: inputs are cast at entry (where a half
  node reads them) and half outputs cast back at exit.

Tolerances (tests/targets/gpu/test_gpu_precision.py): against `ref` in float32, outputs
within about 1e-2 (float16) / 5e-2 (bfloat16) of the largest reference magnitude for
single kernels and small networks; deep networks are compared by top-1 agreement and a
looser relative error (the half rounding of every activation accumulates with depth)."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Graph, Node, TensorType, Value
from ...ir.graph import node_subgraphs
from ...ir.schema import get_schema, infer_outputs, ops_with_trait, require_ops
from ..native.lower_support import SupportContext, node_supported
from .table import SUPPORT

HALF_TYPES = {"fp16": DType.f16, "bf16": DType.bf16}

# the policy's op classes are traits of the op schemas (ir/ops/* define(..., traits=...))
ANCHORS = ops_with_trait("half_anchor")
FP32_OPS = ops_with_trait("half_fp32")
# follow ops whose half kernels read and write half but compute in float32 (row statistics,
# exponentials and their sums never round to half): LayerNormalization, RMSNormalization,
# Softmax, LogSoftmax, ReduceMean / Max / Min, GlobalAveragePool / GlobalMaxPool
# ops that read any element type as it is (the value, not its rounding, matters)
READ_AS_IS = require_ops(frozenset({"Cast", "Shape", "Size"}), "gpu/precision.py READ_AS_IS")
# ops whose float inputs are not all data of the output's type: the data input indices
DATA_INPUTS = require_ops({"Resize": (0,), "Dropout": (0,)}, "gpu/precision.py DATA_INPUTS")


def half_dtype(options: dict) -> DType | None:
    """The half type the options ask for (None: float32); raises ValueError on bad values."""
    for name in ("fp16", "bf16", "fast_math"):
        value = options.get(name, False)
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"gpu option {name}={value!r}: accepted values are True and False")
    if options.get("fp16") and options.get("bf16"):
        raise ValueError(
            "gpu options fp16=True and bf16=True exclude each other: pick one "
            "half type (or neither for float32)"
        )
    for name, dtype in HALF_TYPES.items():
        if options.get(name):
            return dtype
    return None


def run(graph: Graph, ctx) -> None:
    half = half_dtype(ctx.options)
    if half is not None:
        _Rewrite(graph, half).run()


def _is_float32(v: Value | None) -> bool:
    return v is not None and isinstance(v.type, TensorType) and v.type.dtype == DType.f32


class _Rewrite:
    def __init__(self, graph: Graph, half: DType):
        self.graph = graph
        self.half = half
        self.support = SUPPORT
        self.out: list[Node] = []
        self.to_half: dict[Value, Value] = {}  # float32 value -> its half copy
        self.to_float: dict[Value, Value] = {}  # half value -> its float32 copy
        # values read inside subgraphs keep their types (the subgraph was typed for them)
        self.pinned = {v for n in graph.nodes for sub in node_subgraphs(n) for v in _captured(sub)}

    def run(self) -> None:
        for node in list(self.graph.nodes):
            if node.op == "Constant" or node.op in READ_AS_IS:
                self.out.append(node)
            elif not node_subgraphs(node) and self._try_half(node):
                self.out.append(node)
            else:
                self._as_float32(node)
                self.out.append(node)
        self._outputs_back_to_float32()
        self.graph.nodes = self.out

    # -- deciding ---------------------------------------------------------------------
    def _data_inputs(self, node: Node) -> list[int]:
        indices = DATA_INPUTS.get(node.op, range(len(node.inputs)))
        return [i for i in indices if i < len(node.inputs) and node.inputs[i] is not None]

    def _try_half(self, node: Node) -> bool:
        if node.op in FP32_OPS or any(v in self.pinned for v in node.outputs if v is not None):
            return False
        anchor = node.op in ANCHORS
        data = self._data_inputs(node)
        if not anchor:
            live = [node.inputs[i] for i in data if node.inputs[i].constant is None]
            if any(_is_float32(v) for v in live):
                return False  # mixed or float32 inputs: promote
            if not any(_is_float32(node.inputs[i]) or self._is_half(node.inputs[i]) for i in data):
                return False  # no float data at all
        # retype tentatively: the schema's inference on half inputs, then the lowering's verdict
        placeholders = {}
        for i in data:
            v = node.inputs[i]
            if not _is_float32(v):
                continue
            half_type = TensorType(self.half, v.type.dims)
            if v.constant is None:
                placeholders[i] = Value(f"{v.name}/half", half_type)
                continue
            if not _representable(v.constant, self.half, strict=not anchor):
                if anchor:  # left in float32: the lowering says whether it takes the mix
                    continue
                return False
            const = Node("Constant", [], [], {"value": _narrow(v.constant, self.half)})
            const.outputs = [Value(f"{v.name}/half", half_type, const)]
            placeholders[i] = const.outputs[0]
        original_inputs = node.inputs
        node.inputs = [placeholders.get(i, v) for i, v in enumerate(original_inputs)]
        try:
            types = infer_outputs(get_schema(node.op), node)
        except Exception:  # noqa: BLE001 - an op whose inference refuses half: float32
            node.inputs = original_inputs
            return False
        new_types = []
        for value, t in zip(node.outputs, types):
            if value is None or not _is_float32(value):
                new_types.append(None)
            elif isinstance(t, TensorType) and t.dtype == self.half:
                new_types.append(TensorType(self.half, value.type.dims))
            else:
                node.inputs = original_inputs
                return False
        saved = [v.type if v is not None else None for v in node.outputs]
        for value, t in zip(node.outputs, new_types):
            if t is not None:
                value.type = t
        ok = _lowerable(node, self.support)
        if not ok:
            node.inputs = original_inputs
            for value, t in zip(node.outputs, saved):
                if value is not None:
                    value.type = t
            return False
        node.inputs = [
            self._half_of(original_inputs[i]) if i in placeholders else v
            for i, v in enumerate(original_inputs)
        ]
        return True

    def _is_half(self, v: Value | None) -> bool:
        return v is not None and isinstance(v.type, TensorType) and v.type.dtype == self.half

    # -- converting -------------------------------------------------------------------
    def _half_of(self, v: Value) -> Value:
        copy = self.to_half.get(v)
        if copy is None:
            if v.constant is not None:
                array = _narrow(v.constant, self.half)
                copy = self._emit("Constant", [], {"value": array}, f"{v.name}_{self.half.name}")
            else:
                copy = self._emit("Cast", [v], {"to": self.half}, f"{v.name}_{self.half.name}")
            self.to_half[v] = copy
        return copy

    def _float_of(self, v: Value) -> Value:
        copy = self.to_float.get(v)
        if copy is None:
            copy = self._emit("Cast", [v], {"to": DType.f32}, f"{v.name}_f32")
            self.to_float[v] = copy
        return copy

    def _emit(self, op: str, inputs: list, attrs: dict, name: str) -> Value:
        node = self.graph.add_node(op, inputs, attrs, output_names=[name], name=name)
        self.graph.nodes.pop()
        self.out.append(node)
        return node.outputs[0]

    def _as_float32(self, node: Node) -> None:
        node.inputs = [self._float_of(v) if self._is_half(v) else v for v in node.inputs]

    def _outputs_back_to_float32(self) -> None:
        """A half graph output becomes a float32 one of the same name."""
        outputs = []
        for v in self.graph.outputs:
            if v in self.to_float:  # already cast for a float32 reader: reuse it
                v = self._renamed(v, self.to_float[v])
            elif self._is_half(v) and v not in self.graph.inputs:
                v = self._renamed(v, self._float_of(v))
            outputs.append(v)
        self.graph.outputs = outputs

    def _renamed(self, half: Value, wide: Value) -> Value:
        name = half.name
        half.name = self.graph.unique_name(f"{name}_{self.half.name}")
        wide.name = name
        return wide


def _captured(sub: Graph) -> list[Value]:
    from ...ir.graph import captured_values

    return captured_values(sub)


def _narrow(array: np.ndarray, half: DType) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.asarray(array, np.float32).astype(half.numpy)


# a small constant (a scalar, an epsilon, a mask value) must not flush to zero either
_STRICT_SIZE = 16


def _representable(array: np.ndarray, half: DType, strict: bool) -> bool:
    """Whether a float32 constant survives conversion: no finite value overflows and, when
    `strict` and the constant is small, no non-zero value flushes to zero (a few tiny
    weights of a big tensor flushing is an error far below the half rounding)."""
    wide = np.asarray(array, np.float32)
    narrow = _narrow(wide, half).astype(np.float32)
    if np.any(np.isfinite(wide) & ~np.isfinite(narrow)):
        return False
    if not strict or wide.size > _STRICT_SIZE:
        return True
    return not np.any((wide != 0) & (narrow == 0))


def _lowerable(node: Node, support: SupportContext) -> bool:
    static = all(
        isinstance(v.type, TensorType)
        and v.type.dims is not None
        and all(isinstance(d, int) for d in v.type.dims)
        for v in node.inputs
        if v is not None
    )
    if node.op not in support.lowerings:
        return False
    if not static:
        return True
    try:
        return node_supported(node, support, True)
    except Exception:  # noqa: BLE001 - a predicate that cannot judge the node: float32
        return False
