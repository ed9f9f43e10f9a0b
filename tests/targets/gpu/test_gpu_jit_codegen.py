# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Generated Pointwise kernels (targets/gpu/codegen.py) checked on this machine: their source
is also host C++, so every program the gpu lowering writes for these models is compiled with
g++ (one call for all) and run over the plan in place of the interpreter, against the ref
target. Covers every opcode the lowering emits, every dtype it loads and stores, the three
index-map modes (same index, one element, broadcast map), the one- and four-element entries
and non-contiguous input strides."""

from __future__ import annotations

import numpy as np
import pytest

import graphkiln as gk
from graphkiln.compiler import compile_graph
from graphkiln.ir import DType
from graphkiln.targets.native.lower_pointwise import OP, OPCODES
from graphkiln.targets.gpu.codegen import (
    MAPPED,
    SAME,
    SCALAR,
    CodegenError,
    index_map,
    pointwise_source,
)
from graphkiln.targets.gpu.target import GpuExecutable, GpuTarget, lower_plan
from gpu_testing import compare
from jit_host import (
    JitEmulator,
    call_generated,
    compile_host_library,
    input_modes,
    pointwise_sources,
)
from op_cases import CASES as OP_CASES
from cpu_testing import node, onnx_model, rand  # noqa: E402 (op_cases puts it on the path)
from test_cpu_pointwise import UNARY  # noqa: E402

CASES: dict = {}
F32 = np.float32


def _unary(op, low, high, dtype=F32, shape=(3, 7, 11), opset=21, **attrs):
    def make():
        model = onnx_model(
            [node(op, ["x"], ["y"], **attrs)],
            {"x": shape},
            {"y": shape},
            opset=opset,
            dtypes={"x": dtype, "y": dtype},
        )
        return model, {"x": rand(shape, 1, dtype, low, high)}

    return make


for _op, (_low, _high) in UNARY.items():
    CASES[f"unary_{_op}"] = _unary(_op, _low, _high, opset=20 if _op == "Gelu" else 21)
for _op, _attrs in [
    ("LeakyRelu", {"alpha": 0.3}),
    ("Elu", {"alpha": 0.7}),
    ("Selu", {"alpha": 1.5, "gamma": 2.0}),
    ("Celu", {"alpha": 2.0}),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
    ("ThresholdedRelu", {"alpha": 0.5}),
    ("Shrink", {"bias": 0.2, "lambd": 0.8}),
    ("Gelu", {"approximate": "tanh"}),
    ("Swish", {"alpha": 1.5}),
]:
    CASES[f"attrs_{_op}"] = _unary(
        _op, -4, 4, opset={"Swish": 24, "Gelu": 20}.get(_op, 21), **_attrs
    )
for _op in ("Exp", "Tanh", "Sigmoid", "Gelu", "Log"):
    CASES[f"f64_{_op}"] = _unary(_op, 0.1, 3, np.float64, opset=20)
for _dt in (np.float16, "bf16"):
    for _op in ("Sigmoid", "Relu", "Gelu", "Neg"):
        CASES[f"{_dt if isinstance(_dt, str) else 'f16'}_{_op}"] = None  # filled below


def _low_float(dtype_name: str, op: str):
    import ml_dtypes

    dtype = np.float16 if dtype_name == "f16" else ml_dtypes.bfloat16

    def make():
        shape = (5, 33)
        model = onnx_model(
            [node(op, ["x"], ["y"])],
            {"x": shape},
            {"y": shape},
            opset=20,
            dtypes={"x": dtype, "y": dtype},
        )
        return model, {"x": rand(shape, 4, F32, -3, 3).astype(dtype)}

    return make


for _name in [k for k, v in CASES.items() if v is None]:
    CASES[_name] = _low_float(*_name.split("_"))


def _binary(op, a_shape, b_shape, dtype=F32, out_dtype=None, low=-3, high=3, b_low=None, **attrs):
    def make():
        out = np.broadcast_shapes(a_shape, b_shape)
        model = onnx_model(
            [node(op, ["a", "b"], ["c"], **attrs)],
            {"a": a_shape, "b": b_shape},
            {"c": out},
            dtypes={"a": dtype, "b": dtype, "c": out_dtype or dtype},
        )
        a = rand(a_shape, 1, dtype, low, high)
        b = rand(b_shape, 2, dtype, low if b_low is None else b_low, high)
        return model, {"a": a, "b": b}

    return make


# index maps: scalar input, per-channel, middle dim, both sides broadcast, same, lower rank
for _i, (_a, _b) in enumerate(
    [
        ((2, 8, 5, 7), (1,)),
        ((2, 8, 5, 7), (1, 8, 1, 1)),
        ((2, 8, 5, 7), (8, 1, 7)),
        ((2, 1, 5, 7), (1, 8, 5, 1)),
        ((4, 9), (4, 9)),
        ((2, 3, 60), (60,)),
        ((1027,), (1027,)),
    ]
):
    for _op in ("Add", "Sub", "Mul", "Div", "Max", "Min"):
        CASES[f"broadcast{_i}_{_op}"] = _binary(_op, _a, _b)
# the four-element entry reads a broadcast innermost dim once ("splat"), a contiguous one as
# vectors ("run"), others element by element
CASES["vec_splat"] = _binary("Mul", (2, 8, 4, 8), (1, 8, 1, 1))
CASES["vec_run"] = _binary("Sub", (3, 5, 16), (5, 16))
CASES["vec_run_f16"] = _binary("Add", (3, 5, 16), (5, 16), np.float16)
CASES["pow"] = _binary("Pow", (6, 10), (10,), low=0.1, high=2)
CASES["prelu"] = _binary("PRelu", (2, 4, 3, 3), (4, 1, 1))
CASES["mod_float"] = _binary("Mod", (40,), (40,), b_low=0.5, fmod=0)
CASES["fmod_float"] = _binary("Mod", (40,), (40,), b_low=0.5, fmod=1)
for _dt in (np.int64, np.int32, np.int8, np.uint8, np.int16, np.uint16, np.uint32):
    _low = 0 if np.dtype(_dt).kind == "u" else -100
    for _op in ("Add", "Sub", "Mul", "Max", "Min"):
        CASES[f"int_{np.dtype(_dt).name}_{_op}"] = _binary(
            _op, (6, 17), (17,), _dt, low=_low, high=100
        )
    CASES[f"int_{np.dtype(_dt).name}_Div"] = _binary(
        "Div", (6, 17), (17,), _dt, low=_low, high=100, b_low=1
    )
    CASES[f"int_{np.dtype(_dt).name}_Mod"] = _binary(
        "Mod", (6, 17), (17,), _dt, low=_low, high=100, b_low=1
    )
CASES["int_i32_Mod_fmod"] = _binary(
    "Mod", (6, 17), (17,), np.int32, low=-100, high=100, b_low=1, fmod=1
)
CASES["int_i32_Pow"] = _binary("Pow", (6, 17), (17,), np.int32, low=0, high=5)
for _op in ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"):
    CASES[f"compare_{_op}"] = _binary(_op, (4, 50), (50,), F32, np.bool_)
    CASES[f"compare_i64_{_op}"] = _binary(_op, (4, 50), (50,), np.int64, np.bool_)
for _op in ("And", "Or", "Xor"):
    CASES[f"logic_{_op}"] = _binary(_op, (3, 70), (3, 1), np.bool_)
for _dt in (np.int32, np.int16):
    CASES[f"abs_{np.dtype(_dt).name}"] = _unary("Abs", -100, 100, _dt)
    CASES[f"neg_{np.dtype(_dt).name}"] = _unary("Neg", -100, 100, _dt)
CASES["not"] = _unary("Not", 0, 1, np.bool_)


def _cast(src, to, low=-300, high=300):
    def make():
        shape = (4, 25)
        model = onnx_model(
            [node("Cast", ["x"], ["y"], to=_onnx(to))],
            {"x": shape},
            {"y": shape},
            dtypes={"x": src, "y": to},
        )
        x = (
            rand(shape, 3, F32, low, high).astype(src)
            if np.dtype(src).kind == "f"
            else rand(shape, 3, src, low, high)
        )
        return model, {"x": x}

    return make


def _onnx(dtype):
    import ml_dtypes
    from onnx import TensorProto, helper

    if np.dtype(dtype) == np.dtype(ml_dtypes.bfloat16):
        return TensorProto.BFLOAT16
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


for _src, _to in [
    (F32, np.float16),
    (F32, np.int32),
    (F32, np.int8),
    (F32, np.uint8),
    (F32, np.bool_),
    (np.int64, F32),
    (np.float16, F32),
    (np.int32, np.int64),
    (np.float64, F32),
    (F32, np.float64),
    (np.int64, np.int16),
    (np.int32, np.uint8),
    (np.bool_, F32),
]:
    CASES[f"cast_{np.dtype(_src).name}_{np.dtype(_to).name}"] = _cast(
        _src, _to, *((0, 2) if _src is np.bool_ else (-300, 300))
    )


def _f64_sum_to_f32():
    """float64 arithmetic, then a Cast to float32: computed in double, rounded by ToF32 (a
    Cast straight from an input needs no double: the load rounds)."""
    shape = (4, 25)
    model = onnx_model(
        [node("Add", ["x", "x"], ["s"]), node("Cast", ["s"], ["y"], to=_onnx(F32))],
        {"x": shape},
        {"y": shape},
        dtypes={"x": np.float64, "y": F32},
    )
    return model, {"x": rand(shape, 4, F32, -300, 300).astype(np.float64)}


CASES["f64_sum_to_f32"] = _f64_sum_to_f32


def _cast_bf16():
    import ml_dtypes

    return _cast(F32, ml_dtypes.bfloat16)()


CASES["cast_f32_bf16"] = _cast_bf16


def _special():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 100.0, -2.5], F32)
    model = onnx_model(
        [
            node("IsInf", ["x"], ["a"], detect_negative=0),
            node("IsNaN", ["x"], ["b"]),
            node("IsInf", ["x"], ["c"]),
        ],
        {"x": (9,)},
        {"a": (9,), "b": (9,), "c": (9,)},
        dtypes={"a": np.bool_, "b": np.bool_, "c": np.bool_},
    )
    return model, {"x": x}


CASES["special_values"] = _special


def _where():
    shape = (3, 4, 5)
    model = onnx_model(
        [node("Where", ["c", "a", "b"], ["y"])],
        {"c": (4, 1), "a": shape, "b": (5,)},
        {"y": shape},
        dtypes={"c": np.bool_},
    )
    return model, {"c": rand((4, 1), 1, np.bool_), "a": rand(shape, 2), "b": rand((5,), 3)}


CASES["where"] = _where


def _chain():
    """x * sigmoid(x) + bias, clipped, with small constants (Const instructions), -inf."""
    shape = (2, 16, 9)
    nodes = [
        node("Sigmoid", ["x"], ["s"]),
        node("Mul", ["x", "s"], ["m"]),
        node("Add", ["m", "bias"], ["t"]),
        node("Clip", ["t", "lo", "hi"], ["u"]),
        node("Mean", ["u", "x", "t"], ["v"]),
        node("Max", ["v", "neg_inf"], ["y"]),
    ]
    inits = {"lo": np.array(-0.5, F32), "hi": np.array(1.5, F32), "neg_inf": np.array(-np.inf, F32)}
    model = onnx_model(nodes, {"x": shape, "bias": (16, 1)}, {"y": shape}, initializers=inits)
    return model, {"x": rand(shape, 5, low=-4, high=4), "bias": rand((16, 1), 6)}


CASES["chain"] = _chain


def _rounding_chain(dtype_name: str):
    """Casts and arithmetic in a narrow type inside one program: each node's result must be
    rounded to its type before the next (ToF16 / ToBF16 / ToInt between instructions)."""
    import ml_dtypes

    dtype = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "i8": np.int8}[dtype_name]

    def make():
        shape = (7, 31)
        nodes = [
            node("Cast", ["x"], ["a"], to=_onnx(dtype)),
            node("Mul", ["a", "a"], ["b"]),
            node("Add", ["b", "a"], ["c"]),
            node("Cast", ["c"], ["y"], to=_onnx(F32)),
        ]
        model = onnx_model(
            nodes, {"x": shape}, {"y": shape}, dtypes={"a": dtype, "b": dtype, "c": dtype}
        )
        return model, {"x": rand(shape, 8, F32, -11, 11)}

    return make


for _name in ("f16", "bf16", "i8"):
    CASES[f"rounding_chain_{_name}"] = _rounding_chain(_name)
for _name, _make in OP_CASES.items():
    CASES[f"op_cases_{_name}"] = _make


def lower_cases() -> dict:
    """name -> (executable, its plan, model, feeds) for every case with a static plan."""
    executables = {}
    for name, make in CASES.items():
        model, feeds = make()
        graph, _ = compile_graph(gk.parse_onnx_buffer(model).graph, GpuTarget(), {}, False, False)
        plans = []

        def factory(g, builtin_blas=False, plans=plans):
            plan = lower_plan(g)
            plans.append(plan)
            return _Holder(plan, g)

        executable = GpuExecutable(graph, plan_factory=factory)
        if plans:
            executables[name] = (executable, plans[0], model, feeds)
    return executables


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every case's executable (plans lowered), and the host library of all their sources."""
    executables = lower_cases()
    sources = [src for _, plan, _, _ in executables.values() for src in pointwise_sources(plan)]
    return executables, compile_host_library(sources, str(tmp_path_factory.mktemp("jit")))


class _Holder:
    def __init__(self, plan, graph):
        self.plan = plan
        self.input_dtypes = [v.type.dtype.numpy for v in graph.inputs]
        self.executor = None


def _run(built, name: str, vector: bool) -> JitEmulator:
    executables, library = built
    if name not in executables:
        pytest.skip("no static plan")
    executable, plan, model, feeds = executables[name]
    holder = next(iter(executable._plans.values()))
    holder.executor = JitEmulator(plan, library, vector)
    got = executable.run([feeds[v.name] for v in executable.graph.inputs])
    ref = gk.parse_onnx_buffer(model).compile("ref").run(feeds)
    compare(got, ref, rtol=2e-5, atol=1e-6)
    return holder.executor


@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_jit_generated_kernels_match_ref(built, name):
    emulator = _run(built, name, vector=False)
    has_pointwise = any(s.kernel == "Pointwise" for s in emulator.plan.steps)
    if has_pointwise and not name.startswith("op_cases_"):
        assert emulator.ran > 0


@pytest.mark.parametrize(
    "name",
    [
        "broadcast6_Add",
        "broadcast1_Mul",
        "chain",
        "f16_Gelu",
        "int_int32_Add",
        "cast_float32_float16",
        "where",
        "broadcast0_Sub",
        "unary_Exp",
        "vec_splat",
        "vec_run",
        "vec_run_f16",
    ],
)
def test_gpu_jit_four_element_entry_matches_ref(built, name):
    emulator = _run(built, name, vector=True)
    assert any(e.endswith("_v4") for e in emulator.entries), emulator.entries


def test_gpu_jit_cases_cover_every_opcode_dtype_and_map(built):
    executables, _ = built
    opcodes, modes, in_dtypes, out_dtypes = set(), set(), set(), set()
    for _, plan, _, _ in executables.values():
        for step in plan.steps:
            if "jit_source" not in step.attrs:
                continue
            code = step.attrs["program"]
            opcodes.update(OPCODES[code[k]] for k in range(0, len(code), 5))
            maps = step.attrs["jit_maps"]
            modes.update(input_modes(maps))
            out_dtypes.add(maps[1])
            at = 3
            for _ in range(maps[2]):
                in_dtypes.add(maps[at])
                at += 3 + 2 * maps[at + 2]
    assert set(OPCODES) - opcodes == {"MulAdd"}  # no lowering emits it: tested below
    assert modes == {SAME, SCALAR, MAPPED}
    assert in_dtypes >= set(range(13)) - {11}  # every supported dtype but u64
    assert out_dtypes >= set(range(13)) - {11}


def _direct(program, params, num_regs, result, inputs, out, tmp_path, compute="f32"):
    attrs = {
        "program": program,
        "params": params,
        "num_regs": num_regs,
        "result": result,
        "compute": compute,
    }
    src = pointwise_source(attrs, inputs, out)
    library = compile_host_library([src.text], str(tmp_path))
    return src, getattr(library, src.entry)


def test_gpu_jit_muladd_and_strided_inputs(tmp_path):
    """a * b + c with a transposed (non-contiguous) input and a broadcast one."""
    a = rand((5, 6), 1)
    at = np.ascontiguousarray(a.T)  # memory holds a^T; read with strides (1, 5)
    b = rand((6,), 2)
    c = rand((5, 6), 3)
    inputs = [(DType.f32, (5, 6), (1, 5)), (DType.f32, (6,), (1,)), (DType.f32, (5, 6), (6, 1))]
    src, fn = _direct(
        [OP["MulAdd"], 3, 0, 1, 2], [0.0, 0.0], 4, 3, inputs, (DType.f32, (5, 6)), tmp_path
    )
    assert input_modes(src.maps) == [MAPPED, MAPPED, SAME]
    out = np.zeros((5, 6), F32)
    call_generated(fn, [x.ctypes.data for x in (at, b, c, out)], src.maps)
    np.testing.assert_allclose(out, a * b + c, rtol=1e-6)


def test_gpu_jit_vector_reads(built):
    executables, _ = built
    steps = {
        name: [s for s in executables[name][1].steps if "jit_source" in s.attrs][0]
        for name in ("vec_splat", "vec_run", "broadcast1_Mul")
    }
    assert steps["vec_run"].attrs["jit_aligned"] == [0, 1]
    assert steps["vec_splat"].attrs["jit_aligned"] == [0]
    assert steps["broadcast1_Mul"].attrs["jit_aligned"] == [0]
    assert " s1 = " in steps["vec_splat"].attrs["jit_source"]  # one load for four outputs


def test_gpu_jit_index_map_matches_the_kernel_rules():
    assert index_map((2, 3), (3, 1), (2, 3)) == (SAME, [], [])
    assert index_map((1, 1), (1, 1), (4, 5)) == (SCALAR, [], [])
    # per-channel bias on NCHW: the H and W dims merge into one stride-0 dim
    assert index_map((1, 8, 1, 1), (8, 1, 1, 1), (2, 8, 5, 7)) == (MAPPED, [2, 8, 35], [0, 1, 0])
    with pytest.raises(CodegenError, match="does not broadcast"):
        index_map((3,), (1,), (4,))


def test_gpu_jit_source_is_deterministic_and_self_contained():
    attrs = {
        "program": [OP["Exp"], 1, 0, -1, -1],
        "params": [0.0, 0.0],
        "num_regs": 2,
        "result": 1,
        "compute": "f32",
    }
    inputs = [(DType.f16, (4, 8), (8, 1))]
    one = pointwise_source(attrs, inputs, (DType.f16, (4, 8)))
    two = pointwise_source(dict(attrs), list(inputs), (DType.f16, (4, 8)))
    assert one.text == two.text and one.entry == two.entry
    assert "#include" not in one.text.split("#else")[0]  # the device side needs no header
    assert f"GK_KERNEL {one.entry}(" in one.text and f"GK_KERNEL {one.entry}_v4(" in one.text
    other = pointwise_source(attrs, inputs, (DType.f32, (4, 8)))
    assert other.entry != one.entry


def test_gpu_jit_first_kernel_lists_the_others_for_parallel_compiles():
    nodes, inits, prev = [], {}, "x"
    for k in range(4):  # four programs with distinct constants, split by Softmax
        inits[f"c{k}"] = np.array(0.5 + k, F32)
        nodes += [
            node("Mul", [prev, f"c{k}"], [f"m{k}"]),
            node("Softmax", [f"m{k}"], [f"u{k}"], axis=-1),
        ]
        prev = f"u{k}"
    model = onnx_model(nodes, {"x": (3, 8)}, {prev: (3, 8)}, initializers=inits)
    graph, _ = compile_graph(gk.parse_onnx_buffer(model).graph, GpuTarget(), {}, False, False)
    steps = [s for s in lower_plan(graph).steps if "jit_source" in s.attrs]
    assert len(steps) == 4
    first = steps[0].attrs
    assert first["jit_prefetch_entries"] == [s.attrs["jit_entry"] for s in steps[1:]]
    assert first["jit_prefetch"] == [s.attrs["jit_source"] for s in steps[1:]]
    assert all("jit_prefetch" not in s.attrs for s in steps[1:])


def test_gpu_jit_one_source_serves_every_shape_of_a_pattern(tmp_path):
    """Sizes are kernel arguments: a + b with b broadcast along the rows gives one source
    (one compile) for every [rows, cols] with cols a multiple of four (whether the
    four-element entry reads b as vectors is part of the pattern), and that one compiled
    entry computes each shape right; another broadcast pattern is another source."""
    attrs = {
        "program": [OP["Add"], 2, 0, 1, -1],
        "params": [0.0, 0.0],
        "num_regs": 3,
        "result": 2,
        "compute": "f32",
    }

    def source(rows, cols, b_dims):
        b_strides = (b_dims[1], 1)  # b contiguous
        inputs = [(DType.f32, (rows, cols), (cols, 1)), (DType.f32, b_dims, b_strides)]
        return pointwise_source(attrs, inputs, (DType.f32, (rows, cols)))

    shapes = [(3, 40), (5, 164), (7, 1000), (2, 16)]
    sources = [source(r, c, (1, c)) for r, c in shapes]
    assert len({s.text for s in sources}) == 1 and len({s.entry for s in sources}) == 1
    assert "1000" not in sources[0].text and "164" not in sources[0].text
    odd = source(5, 163, (1, 163))  # read element by element in the four-element entry
    assert odd.entry != sources[0].entry and odd.entry == source(9, 17, (1, 17)).entry
    column = source(5, 163, (5, 1))  # b broadcast along the columns: another pattern
    assert column.entry != sources[0].entry
    library = compile_host_library([sources[0].text, odd.text, column.text], str(tmp_path))
    shapes += [(5, 163), (9, 17)]
    sources += [odd, source(9, 17, (1, 17))]
    for k, ((rows, cols), src) in enumerate(zip(shapes, sources)):
        a, b = rand((rows, cols), 10 + k), rand((1, cols), 20 + k)
        out = np.zeros((rows, cols), F32)
        for entry in (src.entry, src.entry + "_v4"):
            out[:] = 0
            call_generated(
                getattr(library, entry), [a.ctypes.data, b.ctypes.data, out.ctypes.data], src.maps
            )
            np.testing.assert_allclose(out, a + b, rtol=1e-6)
    a, b = rand((5, 163), 30), rand((5, 1), 31)
    out = np.zeros((5, 163), F32)
    call_generated(
        getattr(library, column.entry), [a.ctypes.data, b.ctypes.data, out.ctypes.data], column.maps
    )
    np.testing.assert_allclose(out, a + b, rtol=1e-6)


def test_gpu_jit_fast_division_magic_numbers():
    """(umulhi(t, magic) + t) >> shift == t // d over divisors and indices below 2**31, at
    the edges (powers of two and their neighbours, the largest) and at random."""
    from graphkiln.targets.gpu.codegen import fast_div_magic

    rng = np.random.default_rng(0)
    divisors = {1, 2, 3, 7, 48, 2**31 - 1} | {2**k + e for k in range(1, 31) for e in (-1, 0, 1)}
    divisors |= set(int(d) for d in rng.integers(1, 2**31, 300))
    for d in sorted(divisors):
        magic, shift = fast_div_magic(d)
        ts = {0, 1, d - 1, d, d + 1, 2**31 - 1} | set(int(t) for t in rng.integers(0, 2**31, 40))
        for t in ts:
            if t < 2**31:
                assert ((((t * magic) >> 32) + t) & 0xFFFFFFFF) >> shift == t // d, (d, t)
    with pytest.raises(CodegenError):
        fast_div_magic(0)
