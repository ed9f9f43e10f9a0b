# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""What of a node case's recorded outputs ONNX defines, so that node_cases.run_case compares
that and nothing else. The recorded outputs are computed by onnx's case generators with
numpy / ml_dtypes as installed, so what ONNX leaves open they fill with whatever those
releases do; a target must not be scored on it.

- Cast / CastLike from a float type to an integer type: "undefined if OOR", so elements
  whose input is out of the target's range (after truncation toward zero), NaN or infinite
  are not compared (`undefined_elements`).
- Outputs computed from a random op (Bernoulli, RandomUniform(Like), RandomNormal(Like),
  Multinomial, Dropout in training mode with a ratio above 0) are one draw of the generator
  the case was recorded with: they are scored by what the op defines (shape, dtype, the set of
  values; Dropout: y = x * mask / (1 - ratio)), never by the values drawn (`random_checks`).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

_FLOAT_TYPES = {
    "FLOAT",
    "DOUBLE",
    "FLOAT16",
    "BFLOAT16",
    "FLOAT8E4M3FN",
    "FLOAT8E4M3FNUZ",
    "FLOAT8E5M2",
    "FLOAT8E5M2FNUZ",
    "FLOAT8E8M0",
    "FLOAT4E2M1",
}
# the integer types by ONNX name: (smallest, largest) value
_INT_RANGES = {
    **{f"INT{b}": (-(1 << (b - 1)), (1 << (b - 1)) - 1) for b in (2, 4, 8, 16, 32, 64)},
    **{f"UINT{b}": (0, (1 << b) - 1) for b in (2, 4, 8, 16, 32, 64)},
}
RANDOM_OPS = {
    "Bernoulli",
    "RandomUniform",
    "RandomUniformLike",
    "RandomNormal",
    "RandomNormalLike",
    "Multinomial",
}
# ops whose outputs are bool: a Cast of one of these is 0 or 1
_BOOL_OPS = {
    "Equal",
    "Less",
    "Greater",
    "LessOrEqual",
    "GreaterOrEqual",
    "Not",
    "And",
    "Or",
    "Xor",
    "IsNaN",
    "IsInf",
}


class _Graph:
    """The top-level graph of a case's model, with the feeds of one data set."""

    def __init__(self, model: onnx.ModelProto, feeds: dict):
        g = model.graph
        self.outputs = [v.name for v in g.output]
        self.producer = {name: n for n in g.node for name in n.output if name}
        self.values = {t.name: numpy_helper.to_array(t) for t in g.initializer}
        for n in g.node:
            if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
                self.values[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
        self.values.update({k: v for k, v in feeds.items() if v is not None})
        self.elem = {
            v.name: v.type.tensor_type.elem_type
            for v in list(g.input) + list(g.value_info) + list(g.output)
            if v.type.HasField("tensor_type")
        }
        self.elem.update({t.name: t.data_type for t in g.initializer})
        self.nodes = list(g.node)

    def type_name(self, name: str) -> str | None:
        code = self.elem.get(name)
        return onnx.TensorProto.DataType.Name(code) if code else None

    def value(self, node: onnx.NodeProto, i: int):
        """Input i of node as an array, when the feeds or constants give it; else None."""
        if i >= len(node.input) or not node.input[i]:
            return None
        return self.values.get(node.input[i])


def _attr(node: onnx.NodeProto, name: str, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


# -- float -> integer casts -------------------------------------------------------------------


def undefined_elements(model: onnx.ModelProto, feeds: dict) -> dict[int, np.ndarray]:
    """{output index: bool mask of its elements ONNX leaves undefined} for the outputs made by a
    Cast / CastLike from a float type to an integer type whose input the feeds give."""
    graph = _Graph(model, feeds)
    masks = {}
    for i, name in enumerate(graph.outputs):
        node = graph.producer.get(name)
        if node is None or node.op_type not in ("Cast", "CastLike"):
            continue
        if node.op_type == "Cast":
            target = onnx.TensorProto.DataType.Name(_attr(node, "to", 0))
        else:
            target = graph.type_name(node.input[1])
        x = graph.value(node, 0)
        if (
            target not in _INT_RANGES
            or x is None
            or graph.type_name(node.input[0]) not in _FLOAT_TYPES
        ):
            continue
        low, high = _INT_RANGES[target]
        wide = np.asarray(x).astype(np.float64)
        with np.errstate(invalid="ignore"):
            whole = np.trunc(wide)
            masks[i] = ~np.isfinite(wide) | (whole < low) | (whole > high)
    return masks


# -- random ops -------------------------------------------------------------------------------


def _holds_random(node: onnx.NodeProto) -> bool:
    if node.op_type in RANDOM_OPS:
        return True
    return any(
        _holds_random(n)
        for a in node.attribute
        for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs))
        for n in g.node
    )


def _given(node: onnx.NodeProto, i: int) -> bool:
    return len(node.input) > i and bool(node.input[i])


def _random_dropout(graph: _Graph, node: onnx.NodeProto) -> bool:
    """Dropout in training mode with a ratio above 0 (an unknown input counts as random)."""
    if node.op_type != "Dropout" or not _given(node, 2):
        return False  # no training_mode input: inference
    training = graph.value(node, 2)
    if training is not None and not bool(np.asarray(training)):
        return False
    ratio = graph.value(node, 1)
    return not _given(node, 1) or ratio is None or float(np.asarray(ratio)) != 0.0


def random_checks(model: onnx.ModelProto, feeds: dict) -> dict[int, callable]:
    """{output index: check(got_outputs, expected, where)} for the outputs computed from a
    random op; the other outputs are compared as usual."""
    graph = _Graph(model, feeds)
    drawn = set()  # names of values that depend on a draw
    for n in graph.nodes:
        if _holds_random(n) or _random_dropout(graph, n) or any(x in drawn for x in n.input):
            drawn.update(x for x in n.output if x)
    checks = {}
    for i, name in enumerate(graph.outputs):
        if name in drawn:
            checks[i] = _check_for(graph, graph.producer[name], i)
    return checks


def _same_shape_and_dtype(got, expected, where):
    got = np.asarray(got)
    assert got.shape == expected.shape, f"{where}: shape {got.shape}, expected {expected.shape}"
    assert got.dtype == expected.dtype, f"{where}: dtype {got.dtype}, expected {expected.dtype}"
    return got


def _check_for(graph: _Graph, node: onnx.NodeProto, index: int):
    op = node.op_type

    def check(outputs, expected, where):
        got = _same_shape_and_dtype(outputs[index], expected, where)
        if op == "Bernoulli":
            _bernoulli(got, graph.value(node, 0), where)
        elif op == "Cast" and (
            graph.producer.get(node.input[0]) is not None
            and graph.producer[node.input[0]].op_type in _BOOL_OPS
        ):
            _values_in(got, {0, 1}, where)
        elif op in ("RandomUniform", "RandomUniformLike"):
            _uniform(got, _attr(node, "low", 0.0), _attr(node, "high", 1.0), where)
        elif op in ("RandomNormal", "RandomNormalLike"):
            assert np.isfinite(got.astype(np.float64)).all(), f"{where}: non-finite normal draws"
        elif op == "Multinomial":
            logits = graph.value(node, 0)
            if logits is not None:
                _values_in(got, set(range(np.asarray(logits).shape[-1])), where)
        elif op == "Dropout":
            _dropout(graph, node, outputs, index, where)
        # anything else computed from a draw: shape and dtype only

    return check


def _values_in(got, allowed: set, where):
    seen = set(np.unique(got.astype(np.float64)).tolist())
    assert seen <= allowed, (
        f"{where}: values {sorted(seen - allowed)[:8]} outside {sorted(allowed)}"
    )


def _bernoulli(got, p, where):
    _values_in(got, {0, 1}, where)
    if p is not None:
        p = np.broadcast_to(np.asarray(p, np.float64), got.shape)
        values = got.astype(np.float64)
        assert (values[p == 0] == 0).all(), f"{where}: a draw of 1 where p = 0"
        assert (values[p == 1] == 1).all(), f"{where}: a draw of 0 where p = 1"


def _uniform(got, low: float, high: float, where):
    values = got.astype(np.float64)
    # [low, high), except that rounding a draw just below `high` to the output type may give
    # `high` itself (numpy's uniform(...).astype(float32) does)
    assert ((values >= low) & (values <= high)).all(), f"{where}: draws outside [{low}, {high})"


def _dropout(graph: _Graph, node: onnx.NodeProto, outputs, index: int, where):
    x, ratio = graph.value(node, 0), graph.value(node, 1)
    if _given(node, 1) and ratio is None:
        x = None  # a computed ratio: the mask's dtype only
    ratio = 0.5 if ratio is None else float(np.asarray(ratio))
    mask = None
    if len(node.output) > 1 and node.output[1] in graph.outputs:
        mask = np.asarray(outputs[graph.outputs.index(node.output[1])])
        assert mask.dtype == np.bool_, f"{where}: Dropout mask of dtype {mask.dtype}, not bool"
    if x is None or node.output[0] not in graph.outputs:
        return
    x = np.asarray(x)
    y = np.asarray(outputs[graph.outputs.index(node.output[0])]).astype(np.float64)
    kept = x.astype(np.float64) / (1.0 - ratio) if ratio < 1 else np.zeros(x.shape)
    if mask is None:
        mask = ~((y == 0) & (kept != 0))  # an element is dropped when y is 0 and x * scale is not
    assert mask.shape == x.shape, f"{where}: Dropout mask of shape {mask.shape}, expected {x.shape}"
    np.testing.assert_allclose(y[mask], kept[mask], rtol=1e-6, atol=0, err_msg=f"{where}: kept")
    assert (y[~mask] == 0).all(), f"{where}: dropped elements are not 0"
