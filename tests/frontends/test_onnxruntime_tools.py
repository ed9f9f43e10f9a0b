# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""onnxruntime's own tools run here, while the tests run, on models the project exported,
and graphkiln runs what they wrote against onnxruntime on the same file and feeds:

- the transformer optimizer (`onnxruntime.transformers.optimizer.optimize_model`, opt_level
  0, cpu) on the BERT, GPT-2 and T5-style exports: com.microsoft Attention,
  EmbedLayerNormalization, SkipLayerNormalization, BiasGelu, FastGelu,
  SkipSimplifiedLayerNormalization and the like; fp32, so close to onnxruntime's outputs
  (1e-3 of their largest magnitude);
- `quantize_dynamic` (DynamicQuantizeLinear + MatMulInteger / ConvInteger) and
  `quantize_static` (QDQ with u8 or i8 activations, and QOperator: QLinearConv,
  QLinearMatMul, the QLinear* ops) on a small CNN and on the BERT export: within 1e-2 of the
  largest magnitude of onnxruntime's own int8 result (the QOperator BERT within 3e-2: where
  onnxruntime's QLinearAdd rounds an element one step apart from quantize(dequantize(A) +
  dequantize(B)), ref's and cpu's result, the step travels through the later layers; ref and
  cpu agree with each other, and on most feeds with onnxruntime exactly);
- `MatMulNBitsQuantizer` (int4 and int8, several block sizes, symmetric and with zero
  points; with and without the embedding table's Gather quantized to GatherBlockQuantized)
  on a Llama-style decoder: its logits within 1e-3.

Each model runs on ref, on cpu and, where a GPU and a GPU build are present, on gpu; dims
stay symbolic where the export has them (default_dim=None), and each transformer runs at two
shapes. The files recorded by tools/ (test_microsoft_ops.py, test_quantized_models.py)
stay as the record of one onnxruntime release; these follow the installed one."""

from __future__ import annotations

import collections
import functools
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnxruntime.quantization import (
    CalibrationDataReader,
    QuantFormat,
    QuantType,
    quantize_dynamic,
    quantize_static,
)

import graphkiln as gk
from graphkiln.frontends.onnx.microsoft_ops import DEFAULT_DOMAIN_OPS
from gpu_presence import gpu_missing
from ort_tool_models import float_cnn, images, token_feeds

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORTS = {
    "bert_tiny": os.path.join(HERE, "..", "models", "dynamic", "bert_tiny.onnx"),
    "gpt2_tiny": os.path.join(HERE, "..", "models", "dynamic", "gpt2_tiny.onnx"),
    "t5_tiny": os.path.join(HERE, "data", "t5_tiny.onnx"),
    "llama_tiny": os.path.join(HERE, "data", "llama_tiny.onnx"),
}
# the optimizer's model type, heads and hidden size of each export, and two feed shapes
OPTIMIZED = {
    "bert_tiny": ("bert", 4, 32, [(2, 9), (3, 16)]),
    "gpt2_tiny": ("gpt2", 2, 32, [(1, 6), (2, 12)]),
    "t5_tiny": ("t5", 4, 64, [(2, 7), (3, 12)]),
}
QUANTIZED = ["cnn-dynamic", "cnn-qdq-u8", "cnn-qdq-s8", "cnn-qop", "bert-dynamic", "bert-qdq"]
QUANTIZED += ["bert-qop"]
TOLERANCE = {"bert-qop": 3e-2}  # of onnxruntime's largest output magnitude (the docstring)
# bits, block size, symmetric, and whether the embedding table's Gather is quantized too
# (GatherBlockQuantized: int4 codes when symmetric, uint4 with zero points else)
NBITS = {"int4-block32-zp": (4, 32, False, False), "int4-block128": (4, 128, True, False)}
NBITS["int8-block16-zp"] = (8, 16, False, False)
NBITS["int4-block32-zp-gather"] = (4, 32, False, True)
NBITS["int4-block16-gather"] = (4, 16, True, True)
TARGETS = ["ref", "cpu", "gpu"]


def _compile(path: str, target: str):
    if target == "gpu" and gpu_missing():
        pytest.skip(gpu_missing())
    return gk.parse_onnx(path, default_dim=None).compile(target)


def _onnxruntime(path: str, feeds: dict) -> list[np.ndarray]:
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _assert_close(got, want, relative: float, what: str) -> None:
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.shape == w.shape, f"{what}: shape {g.shape}, onnxruntime {w.shape}"
        scale = float(np.abs(w).max())
        assert scale > 0, f"{what}: onnxruntime's output is all zeros"
        err = float(np.abs(g.astype(np.float64) - w).max())
        assert err <= relative * scale, f"{what}: max error {err:.3g} > {relative} x {scale:.3g}"


def _onnxruntime_ops(path: str) -> collections.Counter:
    """The ops of onnxruntime's own that a file holds (com.microsoft, and the ones onnxruntime
    writes in the default domain)."""
    nodes = onnx.load(path).graph.node
    return collections.Counter(
        n.op_type
        for n in nodes
        if n.domain == "com.microsoft"
        or (n.domain in ("", "ai.onnx") and n.op_type in DEFAULT_DOMAIN_OPS)
    )


@pytest.fixture(scope="module")
def tools_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("onnxruntime_tools")


# -- the transformer optimizer -----------------------------------------------------------


@functools.cache
def _optimized(name: str, folder: str) -> str:
    from onnxruntime.transformers import optimizer

    model_type, heads, hidden, _ = OPTIMIZED[name]
    optimized = optimizer.optimize_model(
        EXPORTS[name],
        model_type=model_type,
        num_heads=heads,
        hidden_size=hidden,
        opt_level=0,
        use_gpu=False,
    )
    path = os.path.join(folder, f"{name}_optimized.onnx")
    optimized.save_model_to_file(path)
    return path


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(OPTIMIZED))
def test_transformer_optimizer_output_matches_onnxruntime(name, target, tools_dir):
    path = _optimized(name, str(tools_dir))
    ops = _onnxruntime_ops(path)
    assert ops, f"onnxruntime's optimizer wrote none of its ops into {name}"
    print(f"{name}: onnxruntime {ort.__version__} wrote {dict(sorted(ops.items()))}")
    program = _compile(path, target)
    for j, (batch, sequence) in enumerate(OPTIMIZED[name][3]):
        feeds = token_feeds(name, batch, sequence, seed=10 + j)
        got = program.run(feeds)
        _assert_close(got, _onnxruntime(path, feeds), 1e-3, f"{name} {batch}x{sequence}")


# -- quantize_dynamic / quantize_static --------------------------------------------------


class _Samples(CalibrationDataReader):
    def __init__(self, feeds: list[dict]):
        self.feeds = iter(feeds)

    def get_next(self):
        return next(self.feeds, None)


def _calibration(model: str) -> list[dict]:
    if model == "cnn":
        return [{"input": x} for x in images(1, 8)]
    return [token_feeds("bert_tiny", 2, 12, seed) for seed in range(20, 24)]


@functools.cache
def _quantized(case: str, folder: str) -> str:
    model, how = case.split("-", 1)
    source = EXPORTS["bert_tiny"]
    if model == "cnn":
        source = os.path.join(folder, "small_cnn.onnx")
        onnx.save(float_cnn(), source)
    path = os.path.join(folder, f"{case}.onnx")
    if how == "dynamic":
        # onnxruntime's ConvInteger takes u8 weights only
        weights = QuantType.QUInt8 if model == "cnn" else QuantType.QInt8
        quantize_dynamic(source, path, weight_type=weights)
        return path
    activations = QuantType.QInt8 if how == "qdq-s8" else QuantType.QUInt8
    quantize_static(
        source,
        path,
        _Samples(_calibration(model)),
        quant_format=QuantFormat.QOperator if how == "qop" else QuantFormat.QDQ,
        per_channel=model == "cnn",
        activation_type=activations,
        weight_type=QuantType.QInt8,
    )
    return path


def _feeds(model: str, seed: int) -> dict:
    if model == "cnn":
        return {"input": images(seed, 1)[0]}
    return token_feeds("bert_tiny", 2 + seed % 2, 9 + seed % 5, seed)


# what each quantizer writes: an integer op of ONNX or com.microsoft, or QDQ pairs
_QUANTIZED_OPS = {
    "dynamic": {"DynamicQuantizeLinear", "MatMulInteger", "ConvInteger"},
    "qdq": {"QuantizeLinear", "DequantizeLinear"},
    "qop": {"QLinearConv", "QLinearMatMul"},
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", QUANTIZED)
def test_quantized_model_matches_onnxruntime_int8(case, target, tools_dir):
    path = _quantized(case, str(tools_dir))
    model, how = case.split("-", 1)
    ops = collections.Counter(n.op_type for n in onnx.load(path).graph.node)
    assert set(ops) & _QUANTIZED_OPS[how.split("-")[0]], f"{case}: nothing quantized: {ops}"
    program = _compile(path, target)
    for seed in (30, 31):
        feeds = _feeds(model, seed)
        want = _onnxruntime(path, feeds)
        _assert_close(program.run(feeds), want, TOLERANCE.get(case, 1e-2), f"{case} seed {seed}")


# -- MatMulNBitsQuantizer ----------------------------------------------------------------


@functools.cache
def _nbits(case: str, folder: str) -> str:
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    bits, block, symmetric, gather = NBITS[case]
    extra = {}
    if gather:
        extra = {"op_types_to_quantize": ("MatMul", "Gather")}
        extra["quant_axes"] = (("MatMul", 0), ("Gather", 1))
    quantizer = MatMulNBitsQuantizer(
        onnx.load(EXPORTS["llama_tiny"]),
        block_size=block,
        is_symmetric=symmetric,
        bits=bits,
        **extra,
    )
    quantizer.process()
    path = os.path.join(folder, f"llama_tiny_{case}.onnx")
    quantizer.model.save_model_to_file(path, use_external_data_format=False)
    return path


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", sorted(NBITS))
def test_matmul_nbits_quantizer_output_matches_onnxruntime(case, target, tools_dir):
    path = _nbits(case, str(tools_dir))
    graph = onnx.load(path).graph
    nodes = [n for n in graph.node if n.op_type == "MatMulNBits"]
    assert len(nodes) == 15  # the 7 projections of 2 layers and the LM head
    bits, block, _, gather = NBITS[case]
    tables = [n for n in graph.node if n.op_type == "GatherBlockQuantized"]
    assert len(tables) == int(gather)  # the embedding table, kept in 4 bits
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in nodes[0].attribute}
    assert (attrs["bits"], attrs["block_size"]) == (bits, block)
    program = _compile(path, target)
    feeds = token_feeds("llama_tiny", 1, 12, seed=40)
    _assert_close(program.run(feeds), _onnxruntime(path, feeds), 1e-3, f"llama {case}")
