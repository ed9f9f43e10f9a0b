# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The README's Python example, run as written: each `print(...)  # text` prints that text."""

import ast
import contextlib
import io
from pathlib import Path

import pytest

from graphkiln.targets.registry import default_target

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_python_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("\n## From Python\n") :]
    start = section.index("```python\n") + len("```python\n")
    return section[start : section.index("\n```\n", start) + 1]


def expected_print(statement: ast.stmt, lines: list[str]) -> str | None:
    """The text after `# ` on the last line of a `print(...)` statement, else None."""
    if not (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Name)
        and statement.value.func.id == "print"
    ):
        return None
    last = lines[statement.end_lineno - 1]
    code_end = statement.end_col_offset
    comment = last[code_end:].strip()
    return comment[1:].strip() if comment.startswith("#") else None


def test_readme_python_example_prints_what_it_says(tmp_path, monkeypatch):
    if default_target() != "cpu":
        pytest.skip("the example compiles for cpu: the C++ core is not built")
    monkeypatch.chdir(tmp_path)  # it saves cnn.gkp and cnn.json
    code = readme_python_example()
    lines = code.splitlines()
    namespace: dict = {}
    printed, checked = {}, []
    for statement in ast.parse(code).body:
        source = ast.get_source_segment(code, statement)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(ast.Module([statement], []), "README.md", "exec"), namespace)
        printed[source.split("(")[0].strip()] = out.getvalue()
        expected = expected_print(statement, lines)
        if expected is not None:
            assert out.getvalue() == expected + "\n", source
            checked.append(expected)
    assert checked == [
        "{'image': f32[1,3,32,32]}",
        "[f32[1,10]]",
        "(1, 10) float32",
        "True cpu",
        "True",
    ]
    # prog.print() prints the compiled IR, whose types read as the printed shapes above
    ir = printed["prog.print"]
    assert ir.startswith("graph ") and "(%image: f32[1,3,32,32])" in ir
    assert "Fused(" in ir
    # the default format follows the name; load reads both, compiled and ready to run
    assert (tmp_path / "cnn.gkp").read_bytes().startswith(b"GKILNM")
    assert (tmp_path / "cnn.json").read_bytes().startswith(b'{\n "magic": "graphkiln"')
    graphkiln, np, x = namespace["graphkiln"], namespace["np"], namespace["x"]
    from_json = graphkiln.load("cnn.json")
    assert from_json.is_compiled and from_json.target.name == "cpu"
    np.testing.assert_allclose(
        from_json.run({"image": x})[0], namespace["probabilities"], rtol=1e-6, atol=1e-7
    )


def test_readme_example_is_found_and_names_the_shipped_model():
    code = readme_python_example()
    assert '"models" / "example_cnn.onnx"' in code
    assert (
        Path(__file__).resolve().parents[2] / "python" / "graphkiln" / "models" / "example_cnn.onnx"
    ).is_file()
