# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""tools/check_wheel.py on fake wheels: the ISAs read from the binaries against the label."""

from packaging_testing import amd_sections, make_wheel, nvidia_sections  # first: tools/ on sys.path
import check_wheel


def test_amd_wheel_carries_its_label(tmp_path):
    wheel = make_wheel(tmp_path, "0.1.0+rocm6.gfx90a", amd_sections(["gfx90a"]))
    assert check_wheel.wheel_isas(wheel) == {
        "graphkiln/_core.cpython-311-x86_64-linux-gnu.so": {"gfx90a"}}
    assert check_wheel.main([str(wheel)]) == 0


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
        "graphkiln/_core.cpython-311-x86_64-linux-gnu.so": {"sm_90"}}
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
