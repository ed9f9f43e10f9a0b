# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""DepthToSpace (DCR and CRD) and SpaceToDepth on the gpu target: one StridedCopy over the
rank-6 view of the image side (targets/gpu/lower_tensor.py), against ref; on the emulated
gpu here and, marked gpu, on the device."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln as gk
from gpu_testing import compare, requires_gpu, run_emulated, run_gpu

CASES = [
    ("DepthToSpace", "DCR", 2, (2, 8, 3, 5)),
    ("DepthToSpace", "CRD", 2, (1, 12, 4, 3)),
    ("DepthToSpace", "DCR", 3, (1, 18, 2, 2)),
    ("SpaceToDepth", None, 2, (2, 3, 6, 4)),
    ("SpaceToDepth", None, 3, (1, 2, 9, 6)),
    ("SpaceToDepth", "CRD", 2, (1, 3, 4, 6)),
]


def _model(op, mode, block, dims):
    attrs = {"blocksize": block}
    if mode:
        attrs["mode"] = mode
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    graph = helper.make_graph(
        [node],
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    # SpaceToDepth's mode came with opset 28
    opset = 28 if op == "SpaceToDepth" and mode else 17
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    x = np.random.default_rng(sum(dims)).standard_normal(dims).astype(np.float32)
    return model.SerializeToString(), {"x": x}


def _ref(model, feeds):
    return gk.parse_onnx_buffer(model).compile("ref").run(feeds)


@pytest.mark.parametrize("op, mode, block, dims", CASES)
def test_emulated_matches_ref(op, mode, block, dims):
    model, feeds = _model(op, mode, block, dims)
    compare(run_emulated(model, feeds), _ref(model, feeds), rtol=0, atol=0)


@requires_gpu
@pytest.mark.parametrize("op, mode, block, dims", CASES)
def test_device_matches_ref(op, mode, block, dims):
    model, feeds = _model(op, mode, block, dims)
    compare(run_gpu(model, feeds), _ref(model, feeds), rtol=0, atol=0)
