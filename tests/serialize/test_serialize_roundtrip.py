# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Saved programs load back structurally equal and run bit-identically (msgpack and JSON)."""

import numpy as np
import pytest

import graphkiln
from graphkiln.cli.common import EXAMPLE_MODEL
from graphkiln.ir.equality import structural_diff
from serialize_samples import every_kind_program, identical, node_cases, types_program

FORMATS = ["msgpack", "json"]


def roundtrip(program, fmt):
    loaded = graphkiln.load_buffer(graphkiln.save_buffer(program, fmt))
    assert structural_diff(program.graph, loaded.graph) is None, structural_diff(
        program.graph, loaded.graph
    )
    if program.is_compiled:
        assert loaded.is_compiled
        assert structural_diff(program.compiled_graph, loaded.compiled_graph) is None
        assert loaded.target.name == program.target.name and loaded.options == program.options
        assert [(r.name, r.ms, r.nodes_after) for r in loaded.pass_records] == [
            (r.name, r.ms, r.nodes_after) for r in program.pass_records
        ]
    else:
        assert not loaded.is_compiled and loaded.compiled_graph is None
    return loaded


def names_and_types(graph):
    result = []
    for v in graph.inputs:
        result.append((v.name, v.type))
    for node in graph.nodes:
        result.append(
            (node.name, tuple(None if v is None else (v.name, v.type) for v in node.outputs))
        )
    return result


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_attribute_kind_and_dtype(fmt):
    program, feeds = every_kind_program()
    loaded = roundtrip(program, fmt)
    assert names_and_types(loaded.graph) == names_and_types(program.graph)
    branch = next(n for n in loaded.graph.nodes if n.op == "If")
    assert branch.attrs["then_branch"].parent is loaded.graph
    expected, got = program.run(feeds), loaded.run(feeds)
    assert len(got) == len(expected)
    for i, (e, g) in enumerate(zip(expected, got)):
        assert identical(e, g), f"output {i} ({program.get_output_names()[i]}) differs"


@pytest.mark.parametrize("fmt", FORMATS)
def test_uncompiled_program_and_nested_types(fmt):
    program, feeds = every_kind_program(compile_it=False)
    loaded = roundtrip(program, fmt)
    loaded.compile("ref")
    program.compile("ref")
    assert all(map(identical, program.run(feeds), loaded.run(feeds)))
    roundtrip(types_program(), fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_example_model_compiled_with_optimize(fmt, tmp_path):
    program = graphkiln.parse_onnx(EXAMPLE_MODEL).compile("ref", optimize=True)
    assert program.pass_records
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    expected = program.run({"image": x})
    loaded = roundtrip(program, fmt)
    assert loaded.stats()["kernels"] == program.stats()["kernels"]
    assert identical(expected, loaded.run({"image": x}))
    path = tmp_path / "cnn.any_extension"
    graphkiln.save(program, path, fmt)
    for from_file in (graphkiln.load(path), graphkiln.load(path, map_file=False)):
        assert structural_diff(program.compiled_graph, from_file.compiled_graph) is None
        assert identical(expected, from_file.run({"image": x}))


def test_shared_constants_are_stored_once():
    program = graphkiln.parse_onnx(EXAMPLE_MODEL).compile("ref")  # compiled graph = a copy
    plain = graphkiln.save_buffer(graphkiln.parse_onnx(EXAMPLE_MODEL))
    both = graphkiln.save_buffer(program)
    assert len(both) < 1.2 * len(plain)
    loaded = graphkiln.load_buffer(both)
    first = [n.attrs["value"] for n in loaded.graph.nodes if n.op == "Constant"]
    second = [n.attrs["value"] for n in loaded.compiled_graph.nodes if n.op == "Constant"]
    assert all(a is b for a, b in zip(first, second))


@pytest.mark.parametrize(
    "case_name",
    [
        "test_if",
        "test_if_seq",
        "test_if_opt",
        "test_loop11",
        "test_loop13_seq",
        "test_loop16_seq_none",
        "test_scan9_sum",
        "test_scan_sum",
        "test_range_float_type_positive_delta_expanded",
    ],
)
@pytest.mark.parametrize("optimize", [False, True])
def test_backend_cases_with_subgraphs(case_name, optimize):
    cases = node_cases()
    case = cases.all_cases()[case_name]
    model = case.model
    program = graphkiln.parse_onnx_buffer(model.SerializeToString(), default_dim=None)
    program.compile("ref", optimize=optimize)
    assert any(n.op in ("If", "Loop", "Scan") for n in program.graph.nodes)
    initializers = {t.name for t in model.graph.initializer}
    names = [vi.name for vi in model.graph.input if vi.name not in initializers]
    for fmt in FORMATS:
        loaded = roundtrip(program, fmt)
        for inputs, _ in case.data_sets:
            feeds = {name: cases.to_value(x) for name, x in zip(names, inputs)}
            assert all(map(identical, program.run(feeds), loaded.run(feeds))), fmt


def test_json_is_readable():
    import json

    program, _ = every_kind_program()
    text = graphkiln.save_buffer(program, "json").decode()
    doc = json.loads(text)
    assert doc["magic"] == "graphkiln" and doc["format_version"] == 1
    assert doc["compiled"]["target"] == "ref"
    small = [t for t in doc["tensors"] if "values" in t]
    assert any(t["dtype"] == "i64" for t in small) and any("base64" in t for t in doc["tensors"])
    assert '"op": "If"' in text and "NaN" not in text and "Infinity" not in text
