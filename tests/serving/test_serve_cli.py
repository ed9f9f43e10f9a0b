# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`graphkiln serve` and `graphkiln export-triton` options: --help explains each, and bad
ones fail before anything starts, naming what is accepted."""

import pytest

from graphkiln.cli.main import build_parser, main


def _subparser(name):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices[name]


@pytest.mark.parametrize("command", ["serve", "export-triton"])
def test_help_explains_every_option(command, capsys):
    p = _subparser(command)
    for action in p._actions:
        assert action.help and len(action.help) > 10, action.option_strings or action.dest
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for action in p._actions:
        for flag in action.option_strings:
            assert flag in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["m.onnx", "--port", "70000"], "expected a port from 0 to 65535, got '70000'"),
        (["m.onnx", "--max-batch", "0"], "expected an integer >= 1, got '0'"),
        (["m.onnx", "--instances", "two"], "expected an integer >= 1, got 'two'"),
        (["m.onnx", "--max-delay-ms", "-1"], "expected a number >= 0, got '-1'"),
        (["m.onnx", "--max-body-mb", "0"], "expected a number > 0, got '0'"),
        (["m.onnx", "--target", "tpu"], "invalid choice: 'tpu'"),
        (["m.onnx", "--ray", "--autoscaling", "[1]"], "expected a JSON object"),
    ],
)
def test_bad_serve_options_are_usage_errors(args, message, capsys):
    with pytest.raises(SystemExit) as done:
        main(["serve", *args])
    assert done.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, message",
    [
        (["m.onnx", "--replicas", "2"], "--replicas apply with --ray only"),
        (["a=x.onnx", "a=y.onnx"], "two models are named ['a']"),
        (["a/b=x.onnx"], "cannot appear in a URL path"),
    ],
)
def test_serve_refuses_contradictions(args, message):
    with pytest.raises(SystemExit, match=message.replace("[", r"\[").replace("]", r"\]")):
        main(["serve", *args])


def test_serve_names_a_missing_model_file(tmp_path, capsys):
    pytest.importorskip("uvicorn")
    missing = tmp_path / "nope.onnx"
    assert main(["serve", str(missing), "--port", "0"]) == 1
    assert f"model file {str(missing)!r} does not exist" in capsys.readouterr().err
