# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Kernel contracts as data: per kernel name and target, the attributes a step may carry
(name -> type, required or not), and how many inputs (None entries included: an absent
optional input) and outputs it takes.

Written once here and checked by `LoweringContext.emit` (every step a lowering emits), the
cpu saved-plan loader (targets/cpu/saved_plan.py), `plan_print.verify_plan` and the tests'
numpy model of the gpu kernels (tests/targets/gpu/plan_emulator.py). tests/targets/
test_kernel_contracts.py checks the C++ side against it: every kernel here is registered
in the cpu core / the gpu registry, and every attribute name a kernel's source reads
(`attrs.get_int("x")`, ...) is declared here.

An attribute spec is "name:type", "?name:type" when optional; types are the C++ core's
(src/core/attrs.hpp): int, float (an int is accepted), str, ints, floats (ints accepted),
strs (an empty list of any kind is accepted by every list type). Counts are `n` or
`(low, high)`, high None for any number."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TYPES = ("int", "float", "str", "ints", "floats", "strs")


@dataclass(frozen=True)
class Contract:
    inputs: tuple[int, int | None]
    outputs: tuple[int, int | None]
    attrs: dict  # name -> (type, required)

    def describe(self) -> str:
        return " ".join(("" if req else "?") + f"{n}:{t}" for n, (t, req) in self.attrs.items())


def _count(c) -> tuple:
    return (c, c) if isinstance(c, int) else tuple(c)


def _contract(inputs, outputs, attrs: str) -> Contract:
    table = {}
    for item in attrs.split():
        name, _, kind = item.partition(":")
        assert kind in TYPES, item
        table[name.lstrip("?")] = (kind, not name.startswith("?"))
    return Contract(_count(inputs), _count(outputs), table)


def both(inputs, outputs, attrs: str = "") -> dict:
    c = _contract(inputs, outputs, attrs)
    return {"cpu": c, "gpu": c}


def cpu(inputs, outputs, attrs: str = "") -> dict:
    return {"cpu": _contract(inputs, outputs, attrs)}


def gpu(inputs, outputs, attrs: str = "") -> dict:
    return {"gpu": _contract(inputs, outputs, attrs)}


def _merge(*parts: dict) -> dict:
    out: dict = {}
    for p in parts:
        out.update(p)
    return out


_ATTENTION_CPU = (
    "batch:int head:int ?is_causal:int k_strides:ints kv_heads:int kv_seq:int "
    "?left_window:int ?mask_len:int ?mask_strides:ints ?pos_offset:int "
    "q_heads:int q_seq:int q_strides:ints ?right_window:int scale:float "
    "?softcap:float v_head:int v_strides:ints y_strides:ints"
)
_ATTENTION_GPU = (
    "?batch:int head_dim:int heads:int ?is_causal:int k_strides:ints "
    "?kv_heads:int kv_seq:int ?left_window:int ?offset:int q_seq:int "
    "q_strides:ints ?qk_mode:int ?right_window:int scale:float ?softcap:float "
    "v_dim:int v_strides:ints y_strides:ints ?variant:int"
)
_POST_OPS = "?post_ops:strs ?post_arg:ints ?post_alpha:floats ?post_beta:floats"
# an int8 convolution's quantization (targets/cpu/lower_qconv.py)
_CONV_QUANT = (
    "?q_dst_scale:float ?q_dst_zp:int ?q_src_scale:float ?q_src_zp:int ?q_src_zp_arg:int "
    "?q_wei_scales:floats"
)
_ONEDNN_CONV = (
    "?dilations:ints ?group:int ?pads_begin:ints ?pads_end:ints ?strides:ints " + _POST_OPS
)
_QUANT = (
    "axis_len:int ?block:int inner:int outer:int param_axis:int param_inner:int param_outer:int"
)
# integer products (lower_integer.py)
_INT_MATMUL = "a_batch_strides:ints b_batch_strides:ints batch:ints k:int m:int n:int"
_INT_CONV = (
    "dilations:ints group:int in_dims:ints kernel:ints out_dims:ints pads_begin:ints strides:ints"
)
_CAST_STEPS = "nan_code:int neg_breaks:ints neg_codes:ints pos_breaks:ints pos_codes:ints"
_POOL_GPU = "?count_include_pad:int dilations:ints kernel_shape:ints pads:ints strides:ints"
_POINTWISE = "?compute:str num_regs:int ?params:floats program:ints result:int"
_JIT = (
    "?jit_aligned:ints ?jit_entry:str ?jit_maps:ints ?jit_prefetch:strs "
    "?jit_prefetch_entries:strs ?jit_source:str"
)
_GEMM = (
    "?alpha:float ?batch:int ?beta:float ?epilogue:int ?fast_math:int ?k:int lda:int "
    "ldb:int ldc:int m:int n:int ?relu:int ?stride_a:int ?stride_b:int ?stride_c:int "
    "?trans_a:int ?trans_b:int"
)
_RECURRENT = (
    "activation_alpha:floats activation_beta:floats activations:ints ?clip:float "
    "direction:str hidden:int layout:int outputs:ints"
)

# kernel -> {target: Contract}
TABLE: dict[str, dict[str, Contract]] = {
    "ArgReduce": _merge(
        cpu(1, 1, "axis:int max:int ?select_last_index:int"),
        gpu(1, 1, "outer:int len:int inner:int is_max:int ?select_last_index:int"),
    ),
    "Attention": _merge(cpu(4, 1, _ATTENTION_CPU), gpu(4, (1, 2), _ATTENTION_GPU)),
    "AveragePool": gpu(1, 1, _POOL_GPU),
    "BatchNormalization": cpu(5, 1, "epsilon:float"),
    "Bitwise": both(2, 1, "op:str"),
    "BitwiseNot": both(1, 1),
    "Branch": both(1, 0, "target:int"),  # If compiled in line: lower_control.py
    "CastLookup": both(2, 1),
    "CastSteps": both(1, 1, _CAST_STEPS),
    "CastSubByteInt": both(1, 1, "bits:int codes:ints"),
    "Conv": _merge(
        cpu((3, None), 1, _ONEDNN_CONV + " " + _CONV_QUANT + " ?impl_index:int"),
        gpu(
            (3, 4),
            1,
            "?activation:str dilations:ints ?group:int pads:ints "
            "strides:ints ?fast_math:int ?variant:int",
        ),
    ),
    "ConvTranspose": cpu((3, None), 1, _ONEDNN_CONV),
    "ConvInteger": cpu((2, 4), 1, _INT_CONV),  # lower_integer.py
    "ConvTransposeDirect": cpu(
        (2, 3),
        1,
        "dilations:ints group:int in_dims:ints kernel:ints out_dims:ints pads_begin:ints "
        "strides:ints",
    ),
    "Copy": both(1, 1),
    "CopyRegions": cpu(
        (1, None),
        (1, None),
        "dims:ints dst_strides:ints io:ints offsets:ints ranks:ints src_strides:ints",
    ),
    "Compress": cpu(2, 2, "axis:int cut_axes:ints"),  # counted: lower_select.py
    "Col2Im": cpu(1, 1, "block:ints dilations:ints image:ints pads:ints strides:ints"),
    "CumSum": both((1, 2), 1, "?axis:int ?exclusive:int ?prod:int ?reverse:int"),
    "Det": cpu(1, 1),
    "DFT": cpu(1, 1, "axis:int inverse:int length:int onesided:int"),
    "DequantizeLinear": both((2, 3), 1, _QUANT),
    "DequantizeLinearBytes": cpu(4, 1, _QUANT),
    "DynamicQuantizeLinear": cpu(1, 3),
    "Fill": both(0, 1, "?bits:int"),
    "Gather": both(2, 1, "axis:int"),
    "GatherElements": both(2, 1, "axis:int"),
    "GatherND": cpu(2, 1, "batch_dims:int"),
    "Gemm": gpu((2, 3), 1, _GEMM),
    "GlobalPool": cpu(1, 1, "mode:str"),
    "GridSample": cpu(2, 1, "align_corners:int mode:str padding_mode:str"),
    "GroupNormalization": cpu(3, 1, "epsilon:float groups:int"),
    "GRU": cpu(6, (1, 2), _RECURRENT + " ?linear_before_reset:int"),
    "Hardmax": both(1, 1, "axis:int"),
    "IndexMap": both((1, 2), 1, "?fill_bits:int maps:ints"),
    "Jump": both(0, 0, "target:int"),
    "LayerNormalization": _merge(
        cpu(3, (1, 3), "axis:int epsilon:float"),
        gpu((3, 4), (1, 3), "rows:int len:int ?epsilon:float ?rms:int"),
    ),
    "LogSoftmax": gpu(1, 1, "outer:int len:int inner:int"),
    "LoopNext": both((1, None), 1, "target:int"),  # Loop compiled in line: lower_control.py
    "LoopTest": both(3, 0, "target:int"),
    "LRN": cpu(1, 1, "alpha_over_size:float beta:float bias:float size:int"),
    "LpNormalization": both(1, 1, "axis:int p:int"),
    "LSTM": cpu(8, (1, 3), _RECURRENT + " ?input_forget:int"),
    "LpPool": cpu(
        1,
        1,
        "dilations:ints in_dims:ints kernel:ints out_dims:ints p:float "
        "pads_begin:ints strides:ints",
    ),
    "MatMul": cpu(
        (2, None),
        1,
        "a_dims:ints a_strides:ints b_dims:ints b_strides:ints "
        "y_dims:ints y_strides:ints ?bias_arg:int ?impl_index:int ?q_src_zp:int "
        "?q_src_zp_arg:int " + _POST_OPS,
    ),
    "MatMulInteger": cpu((2, 4), 1, _INT_MATMUL + " ?a_zp_strides:ints ?b_zp_strides:ints"),
    "MatMulNBits": both((3, 5), 1, "K:int N:int bits:int block_size:int"),  # lower_nbits.py
    "MaxPool": gpu(1, 1, _POOL_GPU),
    "MelWeightMatrix": cpu(2, 1, "dft_length:int num_mel_bins:int sample_rate:int"),
    "MaxUnpool": cpu(2, 1, "source_dims:ints"),
    "NegativeLogLikelihoodLoss": gpu((2, 3), 1, "?has_ignore:int ?ignore_index:int ?reduction:str"),
    "NonMaxSuppression": cpu((2, 5), 1, "center_point_box:int"),  # rows cut: lower_nms.py
    "NonZero": cpu(1, 2, "cut_axes:ints"),  # counted: lower_select.py
    "OneHot": both(3, 1, "axis:int"),
    "Pointwise": _merge(cpu((0, None), 1, _POINTWISE), gpu((0, None), 1, _POINTWISE + " " + _JIT)),
    "Pool": cpu(
        1,
        1,
        "algorithm:str ?dilations:ints kernel_shape:ints ?pads_begin:ints "
        "?pads_end:ints ?strides:ints",
    ),
    "QLinearConv": cpu((8, 9), 1, _INT_CONV),
    "QLinearMatMul": cpu(
        8,
        1,
        _INT_MATMUL + " a_scale_strides:ints a_zp_strides:ints b_scale_strides:ints "
        "b_zp_strides:ints",
    ),
    "QuantizeLinear": both((2, 3), 1, _QUANT),
    "QuantizeLinearBytes": cpu(
        4,
        1,
        _QUANT + " mode:str ?codes:ints ?hi:int ?lo:int "
        "?nan_code:int ?neg_breaks:ints ?neg_codes:ints "
        "?pos_breaks:ints ?pos_codes:ints",
    ),
    "RMSNormalization": cpu(2, 1, "axis:int epsilon:float"),
    "Range": both(3, 1),
    "RNN": cpu(6, (1, 2), _RECURRENT),
    "Reduce": _merge(
        cpu(1, 1, "op:str axes:ints"), gpu(1, 1, "op:str outer:int len:int inner:int")
    ),
    "ReverseSequence": cpu(2, 1, "batch_axis:int time_axis:int"),
    "ResizeAxis": both(
        1, 1, "in_len:int index:ints inner:int out_len:int outer:int taps:int weights:floats"
    ),
    "RoiAlign": cpu(
        3,
        1,
        "coordinate_transformation_mode:str mode:str output_height:int output_width:int "
        "sampling_ratio:int spatial_scale:float",
    ),
    "RotaryEmbedding": cpu(
        4, 1, "batch:int dim:int head:int heads:int ?interleaved:int seq:int x_strides:ints"
    ),
    "ScatterElements": both(3, 1, "axis:int ?reduction:str"),
    "ScatterND": both(3, 1, "?reduction:str"),
    "Softmax": _merge(cpu(1, 1, "axis:int ?log:int"), gpu(1, 1, "outer:int len:int inner:int")),
    "STFT": cpu(2, 1, "frame_length:int frame_step:int onesided:int"),
    "StridedCopy": gpu(
        1, 1, "?dims:ints ?dst_offset:int ?dst_strides:ints ?src_offset:int ?src_strides:ints"
    ),
    "TopK": both(1, 2, "axis:int ?largest:int"),
    "Trilu": _merge(cpu((1, 2), 1, "?upper:int"), gpu(1, 1, "?k:int ?upper:int")),
    "Unique": cpu(1, 5, "axis:int cut_axes:ints sorted:int"),  # counted: lower_select.py
}

# attributes every step of a target may carry: cpu tuning's thread count (executor binding)
COMMON = {"cpu": {"num_threads": ("int", False)}, "gpu": {}}

# Reduce's op names: src/cpu/reduce.cpp and src/gpu/reduce.hip take the same
REDUCE_OPS = (
    "sum",
    "mean",
    "max",
    "min",
    "prod",
    "l1",
    "l2",
    "sum_square",
    "log_sum",
    "log_sum_exp",
)
# string attributes with a closed set of values: (kernel, attribute) -> the values
CHOICES = {("Reduce", "op"): REDUCE_OPS}


# A gpu step named "Host.<kernel>" runs the cpu kernel of that name on the host
# (src/gpu/host_step.hip, targets/gpu/host_steps.py): the cpu contract applies.
HOST_STEP_PREFIX = "Host."
HOST_TARGETS = {"gpu": "cpu"}


def contract(target: str, kernel: str) -> Contract | None:
    if kernel.startswith(HOST_STEP_PREFIX) and target in HOST_TARGETS:
        return TABLE.get(kernel[len(HOST_STEP_PREFIX) :], {}).get(HOST_TARGETS[target])
    return TABLE.get(kernel, {}).get(target)


def kernels(target: str) -> list[str]:
    """The kernel names `target` has contracts for, sorted."""
    return sorted(k for k, by_target in TABLE.items() if target in by_target)


def check_step(target: str, kernel: str, attrs: dict, n_inputs: int, n_outputs: int) -> str | None:
    """What is wrong with a step against its kernel's contract (one line), or None."""
    c = contract(target, kernel)
    if c is None:
        return (
            f"the {target} target has no kernel {kernel!r} (kernel_contracts.py lists "
            f"{', '.join(kernels(target))})"
        )
    for what, n, (low, high) in (("inputs", n_inputs, c.inputs), ("outputs", n_outputs, c.outputs)):
        if n < low or (high is not None and n > high):
            want = str(low) if low == high else f"{low} to {high if high is not None else 'any'}"
            return f"kernel {kernel!r} takes {want} {what}, not {n}"
    common = COMMON.get(target, {})
    for name, value in attrs.items():
        spec = c.attrs.get(name) or common.get(name)
        if spec is None:
            return (
                f"kernel {kernel!r} has no attribute {name!r} (it accepts: "
                f"{c.describe() or 'none'})"
            )
        if not type_matches(spec[0], value):
            return (
                f"kernel {kernel!r} attribute {name!r} must be {spec[0]}, not "
                f"{type(value).__name__} {_short(value)}"
            )
        choices = CHOICES.get((kernel, name))
        if choices is not None and value not in choices:
            return (
                f"kernel {kernel!r} attribute {name!r} is {_short(value)}; accepted: "
                f"{', '.join(choices)}"
            )
    missing = [n for n, (_, required) in c.attrs.items() if required and n not in attrs]
    if missing:
        return (
            f"kernel {kernel!r} needs attribute(s) {', '.join(missing)} (it accepts: "
            f"{c.describe()})"
        )
    return None


_INT = (int, np.integer)
_FLOAT = (int, float, np.integer, np.floating)


def type_matches(kind: str, value) -> bool:
    """As src/core/attrs.cpp reads the value the executor binding makes of it."""
    if kind == "int":
        return isinstance(value, _INT)
    if kind == "float":
        return isinstance(value, _FLOAT)
    if kind == "str":
        return isinstance(value, str)
    if not isinstance(value, (list, tuple)):
        return False
    item = {"ints": _INT, "floats": _FLOAT, "strs": str}[kind]
    return all(isinstance(v, item) for v in value)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."
