# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`graphkiln ops --model M`: per op, whether graphkiln imports it and the chosen target
runs it natively, as the target itself decides."""

from cli_models import bernoulli_model, if_model, microsoft_gelu_model, microsoft_model, save

from graphkiln.cli.common import EXAMPLE_MODEL
from graphkiln.cli.main import main


def _ops(capsys, *argv):
    code = main(["ops", *argv])
    return code, capsys.readouterr().out.splitlines()


def test_if_runs_on_cpu_and_its_branch_ops_are_listed(tmp_path, capsys):
    path = save(if_model(), tmp_path, "if.onnx")
    code, lines = _ops(capsys, "--model", path, "--target", "cpu")
    assert code == 0  # If is compiled in line on cpu (targets/native/lower_control.py)
    assert lines == [
        f"{path}: opsets ai.onnx 17; target cpu",
        "ok      Constant x1",
        "ok      Greater x1",
        "ok      If x1",
        "ok      Neg x1 (1 inside subgraphs)",
        "ok      ReduceSum x1",
        "ok      Relu x1 (1 inside subgraphs)",
    ]


def test_bernoulli_is_missing_on_cpu_and_ok_on_ref(tmp_path, capsys):
    path = save(bernoulli_model(), tmp_path, "bernoulli.onnx")
    code, lines = _ops(capsys, "--model", path, "--target", "cpu")
    assert code == 1
    assert lines[1:] == [
        "MISSING Bernoulli x1 (opset 17): the cpu target cannot run it natively; first: node 'yh'",
        "--fallback ref runs the ops the cpu target lacks on ref",
    ]
    code, lines = _ops(capsys, "--model", path, "--target", "ref")
    assert code == 0 and lines == [f"{path}: opsets ai.onnx 17; target ref", "ok      Bernoulli x1"]


def test_an_op_of_another_domain_is_named_with_its_domain_and_opset(tmp_path, capsys):
    path = save(microsoft_model(), tmp_path, "ms.onnx")
    code, lines = _ops(capsys, "--model", path, "--target", "cpu")
    assert code == 1
    assert lines[0] == f"{path}: opsets ai.onnx 17, com.microsoft 1; target cpu"
    assert lines[1] == (
        "unknown Relu x1: graphkiln imports it; the cpu target was not asked, "
        "as the model does not import (see below)"
    )
    assert lines[2].startswith(
        "MISSING com.microsoft::CDist x1 (opset 1): graphkiln imports these "
        "com.microsoft ops only: "
    )
    assert "SkipLayerNormalization" in lines[2]
    assert lines[3].startswith("the model does not import: operator 'CDist'")


def test_an_imported_com_microsoft_op_is_ok(tmp_path, capsys):
    path = save(microsoft_gelu_model(), tmp_path, "gelu.onnx")
    code, lines = _ops(capsys, "--model", path, "--target", "cpu")
    assert code == 0, lines
    assert "ok      com.microsoft::FastGelu x1" in lines


def test_the_example_model_is_all_ok(capsys):
    code, lines = _ops(capsys, "--model", EXAMPLE_MODEL, "--target", "cpu")
    assert code == 0
    assert lines[1:] == [
        "ok      Add x2",
        "ok      BatchNormalization x6",
        "ok      Conv x6",
        "ok      Flatten x1",
        "ok      Gemm x1",
        "ok      GlobalAveragePool x1",
        "ok      MaxPool x1",
        "ok      Relu x5",
        "ok      Softmax x1",
    ]


def test_ops_help_explains_the_report(capsys):
    try:
        main(["ops", "--help"])
    except SystemExit:
        pass
    text = " ".join(capsys.readouterr().out.split())
    assert "--target" in text and "runs it natively" in text and "domain, opset" in text
