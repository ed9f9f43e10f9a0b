# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""tools/make_index.py: one PEP 503 index per flavor, from a folder of wheels."""

import hashlib
import re

from packaging_testing import make_wheel  # first: tools/ on sys.path
import make_index


def test_index_tree_per_flavor(tmp_path):
    wheels = [
        make_wheel(tmp_path, v)
        for v in (
            "0.1.0",
            "0.1.0+rocm6",
            "0.1.0+rocm6.gfx90a",
            "0.1.0+rocm6.gfx1100",
            "0.1.0+cu13.sm90",
        )
    ]
    out = tmp_path / "site"
    assert make_index.main([str(tmp_path), str(out)]) == 0
    expected = {
        "cpu": wheels[0],
        "rocm6": wheels[1],
        "rocm6/gfx90a": wheels[2],
        "rocm6/gfx1100": wheels[3],
        "cu13/sm_90": wheels[4],
    }
    for folder, wheel in expected.items():
        assert 'href="graphkiln/"' in (out / folder / "index.html").read_text()
        page = (out / folder / "graphkiln" / "index.html").read_text()
        links = re.findall(r'href="([^"]+)"', page)
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        assert links == [f"{wheel.name}#sha256={digest}"], folder
        assert (out / folder / "graphkiln" / wheel.name).read_bytes() == wheel.read_bytes()
    root = (out / "index.html").read_text()
    assert all(f'href="{folder}/"' in root for folder in expected)


def test_multi_isa_wheel_fits_no_index(tmp_path, capsys):
    make_wheel(tmp_path, "0.1.0+rocm6.gfx90a.gfx942")
    assert make_index.main([str(tmp_path), str(tmp_path / "site")]) == 1
    assert "belongs to no index" in capsys.readouterr().err
