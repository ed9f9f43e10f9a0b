# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Helpers shared by the ref kernel tests: build a graph of one op node, run it on the ref
target checking the inferred output types against the results, and seeded test data.

`inputs` is a list of numpy arrays, one per op input; None stands for an omitted optional
input. Positions listed in `consts` become Constant nodes (so shape inference sees their
values), the others graph inputs named `in<i>` and fed from the arrays. Attributes are
keyword arguments; one whose name clashes with a helper parameter (Split's `num_outputs`) goes
in the `op_attrs` dict instead.
"""

import numpy as np

from graphkiln.ir import DType, Graph, TensorType
from graphkiln.program import Program


def build_graph(op, inputs, consts=(), num_outputs=1, op_attrs=None, **attrs):
    """A graph whose outputs are those of one `op` node over `inputs`; returns (graph, feeds)."""
    g = Graph()
    values, feeds = [], {}
    for i, a in enumerate(inputs):
        if a is None:
            values.append(None)
        elif i in consts:
            values.append(g.constant(a, f"c{i}"))
        else:
            v = g.add_input(f"in{i}", TensorType(DType.from_numpy(a.dtype), a.shape))
            values.append(v)
            feeds[v.name] = a
    attrs = {**(op_attrs or {}), **attrs}
    g.outputs = list(g.add_node(op, values, attrs, num_outputs=num_outputs).outputs)
    return g, feeds


def check_inferred_types(types, results, exact=False):
    """Each tensor result has its inferred dtype, rank (when known) and every static inferred
    dim; with `exact`, the inferred dims must all be static and equal the result's shape."""
    assert len(types) == len(results)
    for t, r in zip(types, results):
        if not isinstance(t, TensorType):
            continue
        assert t.dtype.numpy == r.dtype, (t, r.dtype)
        if exact:
            assert t.dims == r.shape, (t, r.shape)
        elif t.dims is not None:
            assert len(t.dims) == r.ndim and all(
                not isinstance(d, int) or d == s for d, s in zip(t.dims, r.shape)
            ), (t, r.shape)


def run_graph(graph, feeds, check_inferred=True, exact=False):
    """Run `graph` on ref; returns the list of results (see check_inferred_types)."""
    types = [v.type for v in graph.outputs]
    results = Program(graph).compile("ref").run(feeds)
    if check_inferred:
        check_inferred_types(types, results, exact)
    return results


def run_op_typed(
    op, inputs, consts=(), num_outputs=1, check_inferred=True, exact=False, op_attrs=None, **attrs
):
    """Like run_op, returning (result, inferred type), or two lists with num_outputs > 1."""
    g, feeds = build_graph(op, inputs, consts, num_outputs, op_attrs, **attrs)
    types = [v.type for v in g.outputs]
    results = run_graph(g, feeds, check_inferred, exact)
    return (results[0], types[0]) if num_outputs == 1 else (results, types)


def run_op(
    op, inputs, consts=(), num_outputs=1, check_inferred=True, exact=False, op_attrs=None, **attrs
):
    """Run one `op` node on ref: its result, or the list of results with num_outputs > 1.
    With check_inferred, the inferred dtype and static dims must match the results (with
    `exact`, all dims static and equal)."""
    result, _ = run_op_typed(
        op, inputs, consts, num_outputs, check_inferred, exact, op_attrs, **attrs
    )
    return result


def random_array(shape, seed=0, dtype=np.float32, low=-1.0, high=1.0):
    """Uniform in [low, high), from a generator seeded with `seed`."""
    return np.random.default_rng(seed).uniform(low, high, shape).astype(dtype)


def random_normal(shape, seed=0, dtype=np.float32, scale=1.0):
    """Standard normal times `scale`, from a generator seeded with `seed`."""
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def i64(*values):
    """An int64 vector of `values` (shapes, axes, indices)."""
    return np.array(values, dtype=np.int64)
