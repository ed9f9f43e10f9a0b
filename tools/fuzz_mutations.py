# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Mutations of serialized ONNX models for tools/fuzz_import.py: byte-level (bit flips,
truncation, insertion, deletion, duplication) and protobuf-aware (dims, dtypes, attribute
types, dangling and self-referencing inputs, cycles, op swaps, opsets, raw data, external
data, huge shape-making constants, deep nesting, long chains)."""

from __future__ import annotations

import random

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

INTERESTING_INTS = [
    0,
    1,
    -1,
    2,
    3,
    7,
    255,
    -(2**31),
    2**31 - 1,
    2**32,
    2**40,
    2**62,
    2**63 - 1,
    -(2**63),
]
OPS = sorted({s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain == ""})


# -- byte level ------------------------------------------------------------------------


def flip_bits(data: bytearray, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8)
    return "flip_bits"


def truncate(data: bytearray, rng: random.Random) -> str:
    del data[rng.randrange(len(data)) :]
    return "truncate"


def insert_bytes(data: bytearray, rng: random.Random) -> str:
    i = rng.randrange(len(data) + 1)
    choice = rng.choice(
        [
            b"\xff" * 10,
            b"\x80" * 9 + b"\x01",
            bytes(rng.randrange(256) for _ in range(rng.randint(1, 16))),
            b"\x0a\xff\xff\xff\xff\x0f",
            b"\x00",
        ]
    )
    data[i:i] = choice
    return "insert_bytes"


def delete_bytes(data: bytearray, rng: random.Random) -> str:
    i = rng.randrange(len(data))
    del data[i : i + rng.randint(1, 32)]
    return "delete_bytes"


def duplicate_bytes(data: bytearray, rng: random.Random) -> str:
    i = rng.randrange(len(data))
    chunk = data[i : i + rng.randint(1, 256)]
    j = rng.randrange(len(data) + 1)
    data[j:j] = chunk
    return "duplicate_bytes"


BYTE_MUTATIONS = [flip_bits, truncate, insert_bytes, delete_bytes, duplicate_bytes]


# -- protobuf aware --------------------------------------------------------------------


def _graphs(g: onnx.GraphProto):
    yield g
    for n in g.node:
        for a in n.attribute:
            if a.HasField("g"):
                yield from _graphs(a.g)
            for sub in a.graphs:
                yield from _graphs(sub)


def _nodes(m):
    return [n for g in _graphs(m.graph) for n in g.node]


def _tensors(m):
    out = []
    for g in _graphs(m.graph):
        out.extend(g.initializer)
        out.extend(s.values for s in g.sparse_initializer)
        for n in g.node:
            for a in n.attribute:
                if a.HasField("t"):
                    out.append(a.t)
                out.extend(a.tensors)
    return out


def _value_infos(m):
    return [
        v for g in _graphs(m.graph) for v in list(g.input) + list(g.output) + list(g.value_info)
    ]


def _dims(m):
    dims = []
    for v in _value_infos(m):
        if v.type.HasField("tensor_type"):
            dims.extend(v.type.tensor_type.shape.dim)
    return dims


def _big(rng):
    return rng.choice(INTERESTING_INTS + [rng.randint(-5, 70000)])


def change_dim(m, rng):
    dims = _dims(m)
    if not dims:
        return False
    d = rng.choice(dims)
    if rng.random() < 0.2:
        d.dim_param = rng.choice(["", "N", "1bad", "x" * 300])
    else:
        d.dim_value = _big(rng)
    return True


def change_tensor_dims(m, rng):
    ts = _tensors(m)
    if not ts:
        return False
    t = rng.choice(ts)
    if t.dims and rng.random() < 0.6:
        t.dims[rng.randrange(len(t.dims))] = _big(rng)
    elif rng.random() < 0.5:
        t.dims.append(_big(rng))
    else:
        del t.dims[:]
    return True


def change_dtype(m, rng):
    code = rng.choice(list(range(0, 26)) + [99, -1])
    if rng.random() < 0.5:
        ts = _tensors(m)
        if not ts:
            return False
        rng.choice(ts).data_type = code
    else:
        vis = [v for v in _value_infos(m) if v.type.HasField("tensor_type")]
        if not vis:
            return False
        rng.choice(vis).type.tensor_type.elem_type = code
    return True


def change_attribute(m, rng):
    attrs = [a for n in _nodes(m) for a in n.attribute]
    if not attrs:
        return False
    a = rng.choice(attrs)
    kind = rng.randrange(5)
    if kind == 0:
        a.type = rng.randrange(15)  # the declared kind no longer matches the field that is set
    elif kind == 1:
        a.i = _big(rng)
        if rng.random() < 0.5:
            a.type = onnx.AttributeProto.INT
    elif kind == 2:
        a.ints.extend(_big(rng) for _ in range(rng.randint(0, 4)))
        a.type = onnx.AttributeProto.INTS
    elif kind == 3:
        a.name = rng.choice(["", "axis", "perm", "to", "value", "body", "then_branch", "zzz"])
    else:
        a.ref_attr_name = "outer"
    return True


def dangling_input(m, rng):
    nodes = [n for n in _nodes(m) if n.input]
    if not nodes:
        return False
    n = rng.choice(nodes)
    n.input[rng.randrange(len(n.input))] = rng.choice(
        [
            "nowhere",
            "",
            "x" * 1000,
            "\udcff".encode("utf-8", "surrogatepass").decode("utf-8", "replace"),
        ]
    )
    return True


def self_loop(m, rng):
    nodes = [n for n in _nodes(m) if n.input and n.output]
    if not nodes:
        return False
    n = rng.choice(nodes)
    n.input[rng.randrange(len(n.input))] = rng.choice(n.output)
    return True


def cycle(m, rng):
    nodes = [n for n in m.graph.node if n.input and n.output]
    if len(nodes) < 2:
        return False
    a, b = rng.sample(nodes, 2)
    a.input[0] = b.output[0]
    b.input[0] = a.output[0]
    return True


def swap_op(m, rng):
    nodes = _nodes(m)
    if not nodes:
        return False
    rng.choice(nodes).op_type = rng.choice(OPS)
    return True


def change_outputs(m, rng):
    nodes = [n for n in _nodes(m) if n.output]
    if not nodes:
        return False
    n = rng.choice(nodes)
    choice = rng.randrange(3)
    if choice == 0:
        n.output.append(n.output[0])  # the same name twice
    elif choice == 1:
        n.output[0] = ""
    else:
        other = rng.choice(nodes)
        n.output[0] = other.output[0]
    return True


def change_opset(m, rng):
    if not m.opset_import:
        return False
    entry = rng.choice(m.opset_import)
    choice = rng.randrange(3)
    if choice == 0:
        entry.version = rng.choice([0, 1, 6, 7, 9, 11, 13, 17, 21, 23, 99, -1, 2**62])
    elif choice == 1:
        entry.domain = rng.choice(["ai.onnx", "com.microsoft", "ai.onnx.ml", "ai.onnx.preview"])
    else:
        del m.opset_import[:]
    return True


def change_domain(m, rng):
    nodes = _nodes(m)
    if not nodes:
        return False
    rng.choice(nodes).domain = rng.choice(["ai.onnx", "ai.onnx.ml", "com.microsoft", "x"])
    return True


def delete_things(m, rng):
    g = rng.choice(list(_graphs(m.graph)))
    fields = [
        f
        for f in ("node", "initializer", "input", "output", "sparse_initializer", "value_info")
        if len(getattr(g, f))
    ]
    if not fields:
        return False
    items = getattr(g, rng.choice(fields))
    del items[rng.randrange(len(items))]
    return True


def shuffle_nodes(m, rng):
    g = rng.choice(list(_graphs(m.graph)))
    nodes = list(g.node)
    rng.shuffle(nodes)
    copies = []
    for n in nodes:
        c = onnx.NodeProto()
        c.CopyFrom(n)
        copies.append(c)
    del g.node[:]
    g.node.extend(copies)
    return True


def change_raw_data(m, rng):
    ts = [t for t in _tensors(m) if t.data_type != TensorProto.STRING] or _tensors(m)
    if not ts:
        return False
    t = rng.choice(ts)
    choice = rng.randrange(3)
    if choice == 0 and t.raw_data:
        t.raw_data = t.raw_data[: rng.randrange(len(t.raw_data))]
    elif choice == 1:
        t.raw_data = t.raw_data + bytes(rng.randint(1, 9))
    else:
        for f in ("float_data", "int32_data", "int64_data", "double_data", "string_data"):
            t.ClearField(f)
        t.raw_data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 40)))
    return True


def external_data(m, rng):
    ts = _tensors(m)
    if not ts:
        return False
    t = rng.choice(ts)
    t.data_location = TensorProto.EXTERNAL
    for key, value in (
        ("location", rng.choice(["w.bin", "../w.bin", "/etc/passwd", "a\0b", ""])),
        ("length", rng.choice(["12", "-1", str(2**62), "x"])),
    ):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return True


def huge_shape_constant(m, rng):
    """A ConstantOfShape / Expand / Tile / Range whose constant size input is enormous."""
    g = m.graph
    big = rng.choice([2**20, 2**31, 2**40, 2**62, -5])
    op = rng.choice(["ConstantOfShape", "Expand", "Tile", "Range"])
    feeds = [v.name for v in g.input] or ["nothing"]
    name = f"fz_{rng.randrange(10**6)}"
    if op == "ConstantOfShape":
        g.initializer.append(numpy_helper.from_array(np.int64([big, big]), f"{name}_s"))
        node = onnx.helper.make_node(op, [f"{name}_s"], [name])
    elif op == "Expand":
        g.initializer.append(numpy_helper.from_array(np.int64([big, 1]), f"{name}_s"))
        node = onnx.helper.make_node(op, [rng.choice(feeds), f"{name}_s"], [name])
    elif op == "Tile":
        g.initializer.append(numpy_helper.from_array(np.float32(np.zeros((1, 1))), f"{name}_d"))
        g.initializer.append(numpy_helper.from_array(np.int64([big, big]), f"{name}_r"))
        node = onnx.helper.make_node(op, [f"{name}_d", f"{name}_r"], [name])
    else:
        for part, v in (("a", 0), ("b", big), ("c", rng.choice([1, 0, -1]))):
            g.initializer.append(numpy_helper.from_array(np.int64(v), f"{name}_{part}"))
        node = onnx.helper.make_node(op, [f"{name}_a", f"{name}_b", f"{name}_c"], [name])
    g.node.append(node)
    g.output.append(onnx.helper.make_tensor_value_info(name, TensorProto.UNDEFINED, None))
    return True


def huge_initializer(m, rng):
    """An initializer whose dims multiply to something enormous, with little or no data."""
    dims = [rng.choice([2**16, 2**20, 2**31, 2**40]) for _ in range(rng.randint(1, 3))]
    t = onnx.helper.make_tensor(f"fz_big_{rng.randrange(10**6)}", TensorProto.FLOAT, dims, [])
    if rng.random() < 0.5:
        t.raw_data = b"\0" * 16
    m.graph.initializer.append(t)
    return True


def deep_nesting(m, rng):
    """Wrap the graph in a chain of If nodes, `depth` levels deep (built in place: helper
    copies would reparse the nested graphs)."""
    depth = rng.choice([2, 8, 20, 40, 70, 200])
    inner = onnx.GraphProto()
    inner.CopyFrom(m.graph)
    outer = m.graph
    del outer.node[:]
    del outer.initializer[:]
    cond = onnx.helper.make_tensor_value_info("fz_cond", TensorProto.BOOL, [])
    outer.input.append(cond)
    g = outer
    for level in range(depth):
        node = g.node.add()
        node.op_type = "If"
        node.input.append("fz_cond")
        node.output.extend(o.name for o in inner.output)
        other = node.attribute.add()
        other.name, other.type = "else_branch", onnx.AttributeProto.GRAPH
        if len(inner.node) < 200:
            other.g.CopyFrom(inner)
        else:  # copies of a big graph at every level would only make a big model
            other.g.output.extend(inner.output)
        then = node.attribute.add()
        then.name, then.type = "then_branch", onnx.AttributeProto.GRAPH
        g = then.g
        g.name = f"level{level}"
        g.output.extend(inner.output)
    g.node.extend(inner.node)
    g.initializer.extend(inner.initializer)
    return True


def long_chain(m, rng):
    """Thousands of Identity nodes, in reverse order, ending in an output."""
    g = m.graph
    start = list(g.input) or list(g.output)
    if not start:
        return False
    n = rng.choice([1000, 5000, 20000])
    names = [start[0].name] + [f"fz_chain{i}" for i in range(n)]
    for i in reversed(range(n)):
        node = g.node.add()
        node.op_type = "Identity"
        node.input.append(names[i])
        node.output.append(names[i + 1])
    g.output.append(onnx.helper.make_tensor_value_info(names[-1], TensorProto.UNDEFINED, None))
    return True


def sparse_indices(m, rng):
    g = m.graph
    values = numpy_helper.from_array(np.float32([1.0, 2.0]), f"fz_sp{rng.randrange(10**6)}")
    idx = np.int64(rng.choice([[0, 1], [-1, 3], [2**40, 0], [0], [[0, 0], [9, 9]]]))
    indices = numpy_helper.from_array(idx, "fz_idx")
    dims = rng.choice([[2, 2], [2**31, 2**31], [0], [-3, 2]])
    g.sparse_initializer.append(onnx.helper.make_sparse_tensor(values, indices, dims))
    return True


PROTO_MUTATIONS = [
    change_dim,
    change_tensor_dims,
    change_dtype,
    change_attribute,
    dangling_input,
    self_loop,
    cycle,
    swap_op,
    change_outputs,
    change_opset,
    change_domain,
    delete_things,
    shuffle_nodes,
    change_raw_data,
    external_data,
    huge_shape_constant,
    huge_initializer,
    deep_nesting,
    long_chain,
    sparse_indices,
]


def mutate(seed_bytes: bytes, rng: random.Random) -> tuple[bytes, list[str]]:
    """One fuzz case: 1 to 3 mutations of `seed_bytes`, proto-aware ones first."""
    applied = []
    data = seed_bytes
    if rng.random() < 0.8:
        model = onnx.ModelProto()
        model.ParseFromString(seed_bytes)
        for _ in range(rng.randint(1, 3)):
            mutation = rng.choice(PROTO_MUTATIONS)
            try:
                if mutation(model, rng):
                    applied.append(mutation.__name__)
            except Exception:  # noqa: BLE001  not expressible here (out of range, too deep)
                pass
        try:
            data = model.SerializeToString()
        except Exception:  # noqa: BLE001 - e.g. nesting deeper than protobuf encodes
            applied.append("unserializable")
            data = seed_bytes
    if not applied or rng.random() < 0.15:
        buffer = bytearray(data or b"\0")
        for _ in range(rng.randint(1, 3)):
            if buffer:
                applied.append(rng.choice(BYTE_MUTATIONS)(buffer, rng))
        data = bytes(buffer)
    return data, applied
