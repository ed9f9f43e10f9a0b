# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""tools/check_wheel.py on fake wheels: the ISAs read from the binaries against the label, the
license and metadata in .dist-info; the repository's LICENSE and pyproject metadata."""

import pytest

from packaging_testing import (
    ROOT,
    amd_sections,
    make_wheel,
    nvidia_sections,
)  # first: tools/ on sys.path
import build_wheels
import check_wheel


def test_amd_wheel_carries_its_label(tmp_path):
    wheel = make_wheel(tmp_path, "0.1.0+rocm6.gfx90a", amd_sections(["gfx90a"]))
    assert check_wheel.wheel_isas(wheel) == {
        "graphkiln/_core.cpython-311-x86_64-linux-gnu.so": {"gfx90a"}
    }
    assert check_wheel.main([str(wheel)]) == 0


def test_rocm_wheel_needs_its_cpu_only_module_and_no_linked_hip_runtime(tmp_path, capsys):
    bare = make_wheel(
        tmp_path, "0.1.0+rocm6.gfx90a", amd_sections(["gfx90a"]), leave_out=("_cpu_only",)
    )
    assert check_wheel.main([str(bare)]) == 1
    assert "no graphkiln/_cpu_only/_core*.so" in capsys.readouterr().out
    (tmp_path / "linked").mkdir()
    linked = make_wheel(
        tmp_path / "linked",
        "0.1.0+rocm6.gfx90a",
        {**amd_sections(["gfx90a"]), ".dynstr": b"\0libamdhip64.so.6\0hipMalloc\0"},
    )
    assert check_wheel.main([str(linked)]) == 1
    assert "links libamdhip64 (it must be loaded at run time)" in capsys.readouterr().out


def test_amd_wheel_with_a_missing_isa_fails(tmp_path, capsys):
    wheel = make_wheel(tmp_path, "0.1.0+rocm6.gfx942", amd_sections(["gfx90a"]))
    assert check_wheel.main([str(wheel)]) == 1
    out = capsys.readouterr().out
    assert "missing gfx942, unexpected gfx90a" in out


def test_fat_wheel_is_checked_against_the_supported_list_or_expect(tmp_path):
    wheel = make_wheel(tmp_path, "0.1.0+rocm5", amd_sections(["gfx908", "gfx90a", "gfx1030"]))
    assert check_wheel.main([str(wheel)]) == 1  # the release fat list has gfx942, gfx11xx, ...
    assert check_wheel.main([str(wheel), "--expect", "gfx908,gfx90a,gfx1030"]) == 0


def test_nvidia_sass_entries_are_listed_and_ptx_is_not(tmp_path):
    wheel = make_wheel(tmp_path, "0.1.0+cu13.sm90", nvidia_sections([90], ptx=[90]))
    assert check_wheel.wheel_isas(wheel) == {
        "graphkiln/_core.cpython-311-x86_64-linux-gnu.so": {"sm_90"}
    }
    assert check_wheel.main([str(wheel)]) == 0
    fat = make_wheel(tmp_path, "0.1.0+cu13", nvidia_sections([80, 86, 89, 90, 100, 120]))
    assert check_wheel.main([str(fat)]) == 0


def test_cpu_wheel_must_carry_no_gpu_code(tmp_path):
    assert check_wheel.main([str(make_wheel(tmp_path, "0.1.0"))]) == 0
    assert check_wheel.main([str(make_wheel(tmp_path, "0.1.0", nvidia_sections([90])))]) == 1


def test_size_budget(tmp_path, capsys):
    wheel = make_wheel(tmp_path, "0.1.0", padding=300_000)
    assert check_wheel.main([str(wheel), "--max-mb", "0.2"]) == 1
    assert "over the 0.2 MB budget" in capsys.readouterr().out
    assert check_wheel.main([str(wheel)]) == 0


def test_unknown_label_fails(tmp_path, capsys):
    assert check_wheel.main([str(make_wheel(tmp_path, "0.1.0+opencl3"))]) == 1
    assert "unknown local label" in capsys.readouterr().out


def test_wheel_with_license_and_metadata_passes(tmp_path):
    wheel = make_wheel(tmp_path, "0.1.0")
    assert check_wheel.metadata_problems(wheel) == []
    relabeled = build_wheels.relabel(wheel, "cu13.sm90")  # the license moves with dist-info
    assert check_wheel.metadata_problems(relabeled) == []


@pytest.mark.parametrize(
    "leave_out, problem",
    [
        (("licenses/LICENSE",), "graphkiln-0.1.0.dist-info/licenses/LICENSE is missing"),
        (("License-File",), "no License-File: LICENSE in METADATA"),
        (("License-Expression",), "License-Expression is None, not 'Apache-2.0'"),
        (("Author",), "no Author in METADATA"),
        (
            ("Project-URL: Issues", "Project-URL: Documentation"),
            "no Project-URL for Issues, Documentation",
        ),
    ],
)
def test_wheel_without_license_or_metadata_fails(tmp_path, capsys, leave_out, problem):
    wheel = make_wheel(tmp_path, "0.1.0", leave_out=leave_out)
    assert check_wheel.metadata_problems(wheel) == [problem]
    assert check_wheel.main([str(wheel)]) == 1
    assert f"FAIL: {problem}" in capsys.readouterr().out


def test_wheel_license_must_be_the_apache_text(tmp_path):
    wheel = make_wheel(tmp_path, "0.1.0", license_text=b"MIT License\n")
    assert check_wheel.metadata_problems(wheel) == [
        "graphkiln-0.1.0.dist-info/licenses/LICENSE is not the Apache License 2.0 text"
    ]


def test_repository_license_and_project_metadata():
    """What the wheel and sdist are built from (a real build is checked by check_wheel)."""
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11+")
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:6] == ["Apache", "License", "Version", "2.0,", "January", "2004"]
    assert "END OF TERMS AND CONDITIONS" in text
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = pyproject["project"]
    assert project["license"] == check_wheel.LICENSE_EXPRESSION
    assert project["license-files"] == [check_wheel.LICENSE_FILE]
    assert project["authors"] == [{"name": "graphkiln authors"}]
    assert tuple(project["urls"]) == check_wheel.PROJECT_URLS
    assert all(
        url.startswith("https://github.com/graphkiln/graphkiln") for url in project["urls"].values()
    )
    # PEP 639's string license and license-files need scikit-build-core 0.11
    assert "scikit-build-core>=0.11" in pyproject["build-system"]["requires"]
    assert pyproject["tool"]["scikit-build"]["minimum-version"] == "0.11"
