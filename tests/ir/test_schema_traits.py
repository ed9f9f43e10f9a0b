# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Op traits live in the schemas: the op classes of the passes and the gpu's half-precision
policy are read from them, and tables of op names are checked against the schemas."""

import pytest

from graphkiln.ir.schema import TRAITS, define, ops_with_trait, require_ops
from graphkiln.passes.op_classes import POINTWISE, REDUCTIONS, VIEWS


def test_classes_come_from_traits():
    assert {"Relu", "HardSwish", "Add", "Where", "Cast"} <= POINTWISE
    assert "Conv" not in POINTWISE and "Reshape" in VIEWS and "Softmax" in REDUCTIONS
    assert ops_with_trait("half_anchor") == {"Conv", "ConvTranspose", "MatMul", "Gemm", "Attention"}
    assert {"Exp", "ReduceSum", "CumSum"} <= ops_with_trait("half_fp32")


def test_unknown_trait_is_refused():
    with pytest.raises(ValueError, match="unknown traits \\['elementwise'\\]"):
        define("NotAnOp_traits_test", ("X",), ("Y",), traits=("elementwise",))
    with pytest.raises(ValueError, match="unknown trait"):
        ops_with_trait("fast")
    assert "pointwise" in TRAITS


def test_tables_of_op_names_are_checked():
    with pytest.raises(ValueError, match="here names ops no schema defines: Upsample"):
        require_ops({"Resize", "Upsample"}, "here")
    assert require_ops(("Relu",), "here") == ("Relu",)
