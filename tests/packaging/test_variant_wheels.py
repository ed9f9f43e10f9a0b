# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""tools/make_variant_wheel.py and the variant index of tools/make_index.py: the variant
wheels and `graphkiln-0.1.0-variants.json` checked with variantlib (the PEP 825 draft's
implementation), and the choice a variant-enabled installer makes among them."""

import base64
import hashlib
import json
import re
import sys
import zipfile

import pytest
from packaging_testing import ROOT, amd_sections, make_wheel  # first: tools/ on sys.path

import make_index
import wheel_variants
from build_wheels import AMD_ALL, parse_label
from make_variant_wheel import main, make_variant_wheel, read_variant_json

sys.path.insert(0, str(ROOT / "providers" / "graphkiln-variant-provider"))
from graphkiln_variant_provider.plugin import AMDPlugin, NvidiaPlugin  # noqa: E402

TAGS = "cp311-cp311-manylinux_2_28_x86_64"
CASES = {
    "0.1.0+rocm6.gfx942": (
        "rocm6_gfx942",
        {"amd": {"gfx_arch": ["gfx942"], "isa_build": ["targeted"], "rocm_major": ["6"]}},
    ),
    "0.1.0+rocm6": (
        "rocm6",
        {"amd": {"gfx_arch": sorted(AMD_ALL), "isa_build": ["fat"], "rocm_major": ["6"]}},
    ),
    "0.1.0+cu13.sm90": (
        "cu13_sm90",
        {"nvidia": {"cuda_major": ["13"], "isa_build": ["targeted"], "sm_arch": ["90_real"]}},
    ),
}


@pytest.fixture
def variantlib():
    return pytest.importorskip("variantlib")


def record_ok(wheel):
    """Every file but RECORD is listed in RECORD with its sha256 and size, nothing else."""
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (record,) = [n for n in names if n.endswith(".dist-info/RECORD")]
        rows = [line.split(",") for line in zf.read(record).decode().splitlines()]
        assert sorted(r[0] for r in rows) == sorted(names)
        for name, digest, size in rows:
            if name == record:
                assert digest == size == ""
                continue
            data = zf.read(name)
            b64 = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert (digest, size) == (f"sha256={b64}", str(len(data))), name


@pytest.mark.parametrize("version", CASES)
def test_variant_wheel(tmp_path, version):
    label, variants = CASES[version]
    wheel = make_wheel(tmp_path, version, amd_sections(["gfx942"]))
    out = make_variant_wheel(wheel, tmp_path / "out")
    assert out.name == f"graphkiln-0.1.0-{TAGS}-{label}.whl"
    info = "graphkiln-0.1.0.dist-info/"
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out) as dst:
        old_info = f"graphkiln-{version}.dist-info/"
        moved = {n.replace(old_info, info): src.read(n) for n in src.namelist()}
        assert set(dst.namelist()) == set(moved) | {info + "variant.json", info + "RECORD"}
        for name, data in moved.items():
            if not name.endswith("METADATA"):
                assert dst.read(name) == data, name
        assert re.search(r"^Version: 0\.1\.0$", dst.read(info + "METADATA").decode(), re.M)
        variant_json = json.loads(dst.read(info + "variant.json"))
    record_ok(out)
    assert variant_json["variants"] == {label: variants}
    assert read_variant_json(out) == wheel_variants.dist_info_json(parse_label(version))[1]


@pytest.mark.parametrize("version", CASES)
def test_variant_json_is_variantlibs(tmp_path, variantlib, version):
    """variantlib validates the file and the name, and writes the same bytes itself."""
    from variantlib.api import VariantDescription, VariantProperty, make_variant_dist_info
    from variantlib.constants import VALIDATION_WHEEL_NAME_REGEX
    from variantlib.pyproject_toml import VariantPyProjectToml
    from variantlib.variant_dist_info import VariantDistInfo

    label = CASES[version][0]
    out = make_variant_wheel(make_wheel(tmp_path, version), tmp_path / "out")
    found = VALIDATION_WHEEL_NAME_REGEX.fullmatch(out.name)
    assert found and found.group("variant_label") == label
    assert found.group("namever") == "graphkiln-0.1.0"
    text = read_variant_json(out)
    dist_info = VariantDistInfo(text, expected_label=label)
    props = [VariantProperty(*p) for p in wheel_variants.flavor_properties(parse_label(version))]
    assert dist_info.variant_desc == VariantDescription(props, label=label)
    info = VariantPyProjectToml(
        {
            "variant": {
                "default-priorities": {"namespace": wheel_variants.NAMESPACE_PRIORITIES},
                "providers": {
                    ns: {"requires": [wheel_variants.PROVIDER_REQUIREMENT], "plugin-api": api}
                    for ns, api in wheel_variants.PROVIDERS.items()
                },
            }
        }
    )
    assert make_variant_dist_info(VariantDescription(props, label=label), info) == text


def test_long_label_falls_back_to_variantlibs_hash(tmp_path, variantlib):
    from variantlib.api import VariantDescription, VariantProperty

    flavor = parse_label("0.1.0+rocm6.gfx90a.gfx942")  # rocm6_gfx90a_gfx942: 19 characters
    label = wheel_variants.flavor_label(flavor)
    props = [VariantProperty(*p) for p in wheel_variants.flavor_properties(flavor)]
    assert label == VariantDescription(props).hexdigest and len(label) == 8


def test_cpu_and_variant_wheels_are_refused(tmp_path, capsys):
    cpu = make_wheel(tmp_path, "0.1.0")
    assert main([str(cpu)]) == 1
    assert "CPU wheel has no variant" in capsys.readouterr().err
    variant = make_variant_wheel(make_wheel(tmp_path, "0.1.0+rocm6"), tmp_path / "out")
    assert wheel_variants.variant_label_of(variant.name) == "rocm6"
    assert wheel_variants.variant_label_of(cpu.name) is None


def variant_site(tmp_path):
    """A wheel folder with the CPU wheel, three GPU wheels and their variant wheels, indexed."""
    dist = tmp_path / "dist"
    dist.mkdir()
    make_wheel(dist, "0.1.0")
    for version in CASES:
        make_variant_wheel(make_wheel(dist, version), dist)
    site = tmp_path / "site"
    assert make_index.main([str(dist), str(site)]) == 0
    return dist, site / "variants" / "graphkiln"


def test_variant_index(tmp_path, variantlib):
    from variantlib.variants_json import VariantsJson

    _, project = variant_site(tmp_path)
    page = (project / "index.html").read_text()
    links = [href.split("#")[0] for href in re.findall(r'href="([^"]+)"', page)]
    labels = [label for label, _ in CASES.values()]
    assert sorted(links) == sorted(
        [f"graphkiln-0.1.0-{TAGS}.whl", "graphkiln-0.1.0-variants.json"]
        + [f"graphkiln-0.1.0-{TAGS}-{label}.whl" for label in labels]
    )
    text = (project / "graphkiln-0.1.0-variants.json").read_text()
    index = VariantsJson(json.loads(text))
    assert sorted(index.variants) == sorted(labels)
    for label, variants in CASES.values():
        assert index.variants[label].to_dict() == variants
    # the plain GPU wheels keep their own per-flavor indexes
    assert (tmp_path / "site" / "rocm6" / "gfx942" / "graphkiln").is_dir()


def test_variant_index_is_variantlibs(tmp_path, variantlib):
    """variantlib's generate-index-json over the same variant wheels writes the same file."""
    import logging

    from variantlib.commands.generate_index_json import generate_index_json

    _, project = variant_site(tmp_path)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    for wheel in project.glob("*.whl"):
        (theirs / wheel.name).write_bytes(wheel.read_bytes())
    logging.getLogger("variantlib").setLevel(logging.CRITICAL)
    generate_index_json(["-d", str(theirs)])
    name = "graphkiln-0.1.0-variants.json"
    assert (theirs / name).read_text() == (project / name).read_text()


def test_index_refuses_conflicting_variants(tmp_path):
    one = wheel_variants.dist_info_json(parse_label("0.1.0+rocm6.gfx942"))[1]
    other = one.replace('"gfx942"', '"gfx90a"')
    with pytest.raises(ValueError, match="differs"):
        wheel_variants.merge_variants({"a.whl": one, "b.whl": other})


def installer_choice(variants_json_text, amd=None, nvidia=None):
    """The labels a variant-enabled installer (variantlib's resolver) would try, best first,
    given what graphkiln-variant-provider reports here; `null` is the non-variant wheel."""
    from variantlib.models.variant import VariantProperty
    from variantlib.resolver.lib import sort_and_filter_supported_variants
    from variantlib.variants_json import VariantsJson

    index = VariantsJson(json.loads(variants_json_text))
    supported = [
        VariantProperty(plugin.namespace, config.name, value)
        for plugin, found in ((AMDPlugin, amd), (NvidiaPlugin, nvidia))
        if found
        for config in plugin.configs(*found)
        for value in config.values
    ]
    ranked = sort_and_filter_supported_variants(
        list(index.variants.values()),
        supported,
        namespace_priorities=index.namespace_priorities,
        filter_values=True,
    )
    return [v.label for v in ranked]


@pytest.mark.parametrize(
    "amd, nvidia, expected",
    [
        ((["gfx942"], ["6"]), None, ["rocm6_gfx942", "rocm6", "null"]),
        # GPU 0 is gfx90a, which only the fat wheel covers: it ranks first
        ((["gfx90a", "gfx942"], ["6"]), None, ["rocm6", "rocm6_gfx942", "null"]),
        ((["gfx942", "gfx90a"], ["6"]), None, ["rocm6_gfx942", "rocm6", "null"]),
        ((["gfx1100"], ["6"]), None, ["rocm6", "null"]),
        # ROCm 7 runs the HIP 6 build (it loads libamdhip64.so.7): the same choice
        ((["gfx942"], ["7"]), None, ["rocm6_gfx942", "rocm6", "null"]),
        ((["gfx942"], ["5"]), None, ["null"]),  # ROCm 5 cannot: the CPU wheel
        ((["gfx942"], []), None, ["null"]),  # ROCm not found: the CPU wheel
        ((["gfx906"], ["6"]), None, ["null"]),
        (None, (["90_real"], ["13"]), ["cu13_sm90", "null"]),
        (None, (["89_real"], ["13"]), ["null"]),
        (None, None, ["null"]),
    ],
)
def test_installer_choice(tmp_path, variantlib, amd, nvidia, expected):
    _, project = variant_site(tmp_path)
    text = (project / "graphkiln-0.1.0-variants.json").read_text()
    assert installer_choice(text, amd, nvidia) == expected
