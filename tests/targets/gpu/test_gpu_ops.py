# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Per-op verification of the gpu target against ref: on the device (marked gpu, skipped
with the reason where no GPU is usable) and, everywhere, through the numpy model of the
gpu kernels (so the lowering's strides, BLAS arguments and programs are checked in CI)."""

import pytest

from gpu_testing import check, requires_gpu
from op_cases import CASES

# float32 on the device: cuBLAS and fused kernels reassociate sums
RTOL, ATOL = 2e-4, 2e-5


@pytest.mark.parametrize("name", sorted(CASES))
def test_lowering_emulated(name):
    model, feeds = CASES[name]()
    check(model, feeds, on_device=False, rtol=RTOL, atol=ATOL)


@requires_gpu
@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_matches_ref(name):
    model, feeds = CASES[name]()
    check(model, feeds, on_device=True, rtol=RTOL, atol=ATOL)


@requires_gpu
@pytest.mark.parametrize(
    "name",
    [
        "matmul_batched",
        "gemm_transposes_bias",
        "conv_3x3_pad",
        "conv_grouped",
        "attention_3d_heads",
        "mlp_block",
    ],
)
def test_gpu_builtin_gemm_matches_ref(name):
    model, feeds = CASES[name]()
    check(model, feeds, on_device=True, rtol=RTOL, atol=ATOL, blas="builtin")


def test_matmul_with_one_weight_is_one_product():
    """[4, 17, 8] @ [8, 9] (one B for every batch, as a Linear layer's weight): one Gemm over
    the 68 stacked rows rather than a batch of 4 products of 17 (and, above, the same values
    as ref)."""
    import graphkiln as gk
    from graphkiln.compiler import compile_graph
    from graphkiln.targets.gpu.target import GpuTarget, lower_plan

    model, _ = CASES["matmul_broadcast_b"]()
    graph, _ = compile_graph(gk.parse_onnx_buffer(model).graph, GpuTarget(), {}, False, False)
    (gemm,) = [s for s in lower_plan(graph).steps if s.kernel == "Gemm"]
    assert (gemm.attrs["m"], gemm.attrs["n"], gemm.attrs["k"], gemm.attrs["batch"]) == (68, 9, 8, 1)


def test_residual_add_joins_the_layer_norm():
    """MatMul, Add(residual), LayerNormalization: a Gemm and one LayerNormalization step that
    reads the product and the residual (its input 3); no step writes the sum."""
    import graphkiln as gk
    from graphkiln.compiler import compile_graph
    from graphkiln.targets.gpu.target import GpuTarget, lower_plan

    model, _ = CASES["residual_layernorm"]()
    graph, _ = compile_graph(gk.parse_onnx_buffer(model).graph, GpuTarget(), {}, False, False)
    plan = lower_plan(graph)
    assert [s.kernel for s in plan.steps] == ["Gemm", "LayerNormalization"]
    (gemm, norm) = plan.steps
    assert len(norm.inputs) == 4 and norm.inputs[0] == gemm.outputs[0]


def test_projection_bias_joins_the_gemm_and_residual_the_layer_norm():
    """MatMul, Add(bias), Add(residual), LayerNormalization (a transformer block's output
    projection): a Gemm with the bias epilogue and one LayerNormalization step reading the
    product and the residual; no Pointwise step (values against ref, and the case where the
    biased product is read elsewhere too: above)."""
    import graphkiln as gk
    from graphkiln.compiler import compile_graph
    from graphkiln.targets.gpu.target import GpuTarget, lower_plan

    for fp16 in (False, True):
        model, _ = CASES["projection_bias_residual_layernorm"]()
        graph, _ = compile_graph(
            gk.parse_onnx_buffer(model).graph, GpuTarget(), {"fp16": fp16}, False, False
        )
        steps = lower_plan(graph).steps
        if not fp16:  # fp16 adds the casts of the float32 inputs and output
            assert [s.kernel for s in steps] == ["Gemm", "Gemm", "LayerNormalization"]
        gemm, residual = [s for s in steps if s.kernel == "Gemm"]
        assert gemm.attrs.get("epilogue") == 1 and not residual.attrs.get("epilogue")
        readers = [s for s in steps if gemm.outputs[0] in s.inputs]
        assert [s.kernel for s in readers] == ["LayerNormalization"]
        assert readers[0].inputs[0] == gemm.outputs[0]
        assert readers[0].inputs[3] == residual.outputs[0]


@pytest.mark.parametrize(
    "name,epilogues",
    [
        ("mlp_block", [(1, 1), (0, 0)]),  # bias + Relu in the first Gemm; the residual stays out
        ("linear_bias_no_relu", [(1, 0)]),
        ("gemm_row_bias_epilogue", [(1, 0)]),
        ("gemm_transposes_bias", [(0, 0)]),  # beta 2: rows filled first, accumulated with beta
    ],
)
def test_bias_and_relu_join_the_gemm(name, epilogues):
    """MatMul + Add(bias) (+ Relu), and Gemm with a row-vector C at beta 1: one Gemm step with
    attributes epilogue=1 (input 2 the bias) and relu (values against ref: above)."""
    import graphkiln as gk
    from graphkiln.compiler import compile_graph
    from graphkiln.targets.gpu.target import GpuTarget, lower_plan

    model, _ = CASES[name]()
    graph, _ = compile_graph(gk.parse_onnx_buffer(model).graph, GpuTarget(), {}, False, False)
    gemms = [s for s in lower_plan(graph).steps if s.kernel == "Gemm"]
    assert [(s.attrs.get("epilogue", 0), s.attrs.get("relu", 0)) for s in gemms] == epilogues
