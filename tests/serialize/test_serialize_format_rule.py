# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Which format `save` writes follows the file name (one rule, serialize.format_for_path, for
the API and `graphkiln compile -o`); an explicit format that contradicts a .json / .msgpack
name is refused; `load` tells the format from the content, whatever the name."""

import numpy as np
import pytest

import graphkiln
from graphkiln.cli.common import EXAMPLE_MODEL
from graphkiln.cli.main import main
from graphkiln.serialize import format_for_path

MSGPACK, JSON = b"GKILNM", b'{\n "magic": "graphkiln"'


@pytest.fixture(scope="module")
def program():
    return graphkiln.parse_onnx(EXAMPLE_MODEL).compile("ref")


@pytest.mark.parametrize(
    "name, format, written",
    [
        ("p.json", None, "json"),
        ("p.JSON", None, "json"),
        ("p.gkp", None, "msgpack"),
        ("p.msgpack", None, "msgpack"),
        ("p", None, "msgpack"),
        ("p.json.gkp", None, "msgpack"),
        ("p.gkp", "json", "json"),
        ("p.gkp", "msgpack", "msgpack"),
        ("p.json", "json", "json"),
        ("p.msgpack", "msgpack", "msgpack"),
        ("p.onnx", "json", "json"),
    ],
)
def test_format_for_path(tmp_path, name, format, written):
    assert format_for_path(name, format) == written
    assert format_for_path(tmp_path / name, format) == written  # os.PathLike too


@pytest.mark.parametrize(
    "name, format", [("p.json", "msgpack"), ("p.JSON", "msgpack"), ("p.msgpack", "json")]
)
def test_format_contradicting_the_name_is_refused(name, format):
    named = "msgpack" if format == "json" else "json"
    with pytest.raises(
        ValueError,
        match=rf"'{name}' is named as a {named} file .* the format "
        rf"asked for is '{format}': ask for '{named}'",
    ):
        format_for_path(name, format)


def test_unknown_format_names_the_accepted_ones():
    with pytest.raises(ValueError, match=r"unknown format 'xml'; use one of msgpack, json"):
        format_for_path("p.gkp", "xml")


def test_save_follows_the_name_and_load_reads_either(tmp_path, program):
    x = np.random.default_rng(3).standard_normal((1, 3, 32, 32)).astype(np.float32)
    expected = program.run({"image": x})[0]
    graphkiln.save(program, tmp_path / "p.json")
    graphkiln.save(program, tmp_path / "p.gkp")
    graphkiln.save(program, tmp_path / "j.gkp", format="json")
    assert (tmp_path / "p.json").read_bytes().startswith(JSON)
    assert (tmp_path / "p.gkp").read_bytes().startswith(MSGPACK)
    assert (tmp_path / "j.gkp").read_bytes().startswith(JSON)
    # a misnamed file (renamed, or written before this rule) still loads: the content decides
    (tmp_path / "p.gkp").rename(tmp_path / "msgpack-inside.json")
    for name in ("p.json", "j.gkp", "msgpack-inside.json"):
        loaded = graphkiln.load(tmp_path / name)
        assert loaded.is_compiled and loaded.target.name == "ref"
        assert loaded.run({"image": x})[0].tobytes() == expected.tobytes()


def test_save_refuses_a_contradiction_and_writes_nothing(tmp_path, program):
    with pytest.raises(ValueError, match="named as a json file"):
        graphkiln.save(program, tmp_path / "p.json", format="msgpack")
    assert list(tmp_path.iterdir()) == []


def test_cli_compile_output_follows_the_same_rule(tmp_path, capsys):
    assert main(["compile", EXAMPLE_MODEL, "--target", "ref", "-o", str(tmp_path / "c.json")]) == 0
    assert "(json, " in capsys.readouterr().out
    assert (tmp_path / "c.json").read_bytes().startswith(JSON)
    assert (
        main(
            [
                "compile",
                EXAMPLE_MODEL,
                "--target",
                "ref",
                "-o",
                str(tmp_path / "c.msgpack"),
                "--format",
                "json",
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert (
        "c.msgpack' is named as a msgpack file (.msgpack) but the format asked for is 'json'" in err
    )
    assert not (tmp_path / "c.msgpack").exists()
