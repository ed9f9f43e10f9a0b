# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The version labels of tools/build_wheels.py and the relabeling of a built wheel."""

import re
import zipfile

import pytest

from packaging_testing import ROOT, make_wheel  # first: tools/ on sys.path
import build_wheels
from build_wheels import Flavor, parse_label


@pytest.mark.parametrize(
    "flavor, label, index",
    [
        (Flavor("cpu"), None, "cpu"),
        (Flavor("rocm6", fat=True), "rocm6", "rocm6"),
        (Flavor("rocm6", ("gfx90a",)), "rocm6.gfx90a", "rocm6/gfx90a"),
        (Flavor("cu13", fat=True), "cu13", "cu13"),
        (Flavor("cu13", ("sm_90",)), "cu13.sm90", "cu13/sm_90"),
    ],
)
def test_label_round_trip(flavor, label, index):
    assert flavor.label == label
    assert parse_label("0.1.0" + (f"+{label}" if label else "")) == flavor
    assert flavor.index_dir == index


def test_flavor_for_explicit_targets(monkeypatch):
    majors = {"amd": "6", "nvidia": "13"}
    monkeypatch.setattr(build_wheels, "toolkit_major", lambda platform: majors[platform])
    assert build_wheels.flavor_for("gfx90a").label == "rocm6.gfx90a"
    assert build_wheels.flavor_for("gfx90a;gfx942").label == "rocm6.gfx90a.gfx942"
    assert build_wheels.flavor_for("sm_90").label == "cu13.sm90"
    assert build_wheels.flavor_for("all").label == "rocm6"
    monkeypatch.setenv("HIP_PLATFORM", "nvidia")
    assert build_wheels.flavor_for("all").label == "cu13"
    assert build_wheels.flavor_for(None).label is None
    with pytest.raises(SystemExit, match="one platform"):
        build_wheels.flavor_for("gfx90a;sm_90")


def test_relabel_rewrites_metadata_record_and_name(tmp_path):
    wheel = make_wheel(tmp_path, "0.1.0")
    relabeled = build_wheels.relabel(wheel, "rocm6.gfx90a")
    assert relabeled.name == "graphkiln-0.1.0+rocm6.gfx90a-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert not wheel.exists()
    with zipfile.ZipFile(relabeled) as z:
        info = "graphkiln-0.1.0+rocm6.gfx90a.dist-info/"
        assert "Version: 0.1.0+rocm6.gfx90a" in z.read(info + "METADATA").decode()
        record = z.read(info + "RECORD").decode().splitlines()
        assert sorted(line.split(",")[0] for line in record) == sorted(z.namelist())
        assert all(re.fullmatch(r".+,sha256=[\w-]+,\d+", line) for line in record[:-1])


def test_supported_lists_match_cmake():
    cmake = (ROOT / "cmake" / "GpuTargets.cmake").read_text()
    amd = re.search(r"set\(GRAPHKILN_AMD_ALL ([^)]*)\)", cmake).group(1).split()
    nvidia = re.search(r"set\(GRAPHKILN_NVIDIA_ALL ([^)]*)\)", cmake).group(1).split()
    assert tuple(amd) == build_wheels.AMD_ALL and tuple(nvidia) == build_wheels.NVIDIA_ALL
