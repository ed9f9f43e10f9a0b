# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""providers/graphkiln-variant-provider: its parsers on recorded / sample tool outputs
(data/README.md), its plugins' configs, and variantlib loading them (importorskip)."""

import sys

import pytest
from packaging_testing import DATA, ROOT

sys.path.insert(0, str(ROOT / "providers" / "graphkiln-variant-provider"))
from graphkiln_variant_provider import probes  # noqa: E402
from graphkiln_variant_provider.__main__ import main as provider_main  # noqa: E402
from graphkiln_variant_provider.plugin import AMDPlugin, NvidiaPlugin  # noqa: E402

PROVIDER_DIR = ROOT / "providers" / "graphkiln-variant-provider"


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_rocminfo_gpu_agents_only():
    assert probes.parse_rocminfo(read("rocminfo_cpu_mi210_rx7900.txt")) == ["gfx90a", "gfx1100"]
    assert probes.parse_rocminfo(read("rocminfo_no_gpu_debian_rocm52.txt")) == []


def test_offload_arch_one_per_isa():
    assert probes.parse_offload_arch(read("offload_arch_two_mi300x.txt")) == ["gfx942"]
    assert probes.parse_offload_arch("gfx90a:sramecc+:xnack-\n") == ["gfx90a"]


@pytest.mark.parametrize(
    "name, expected",
    [
        ("nvidia_smi_h100_rtx4090.csv", ["90_real", "89_real"]),
        ("nvidia_smi_h200.csv", ["90_real"]),
        ("nvidia_smi_compute_cap_h100_rtx4090_sample.csv", ["90_real", "89_real"]),
    ],
)
def test_compute_caps(name, expected):
    assert probes.parse_compute_caps(read(name)) == expected


def test_runtime_majors():
    assert probes.parse_nvidia_smi_cuda_major(read("nvidia_smi_header_h100_sample.txt")) == ["13"]
    assert probes.parse_rocm_version(read("rocm_info_version_624_sample.txt")) == ["6"]
    assert probes.parse_rocm_version(read("hipconfig_version_624_sample.txt")) == ["6"]
    assert probes.hip_version_major(60241134) == ["6"]
    assert probes.parse_rocm_version("") == probes.parse_nvidia_smi_cuda_major("") == []


def as_dict(configs):
    return {c.name: (c.values, c.multi_value) for c in configs}


@pytest.fixture
def recorded_tools(monkeypatch, tmp_path):
    """The probes see the recorded outputs: rocminfo (MI210 + RX 7900), nvidia-smi (H100 +
    RTX 4090), ROCm 6.2.4 in $ROCM_PATH; no hip-python, no offload-arch."""
    outputs = {
        "rocminfo": read("rocminfo_cpu_mi210_rx7900.txt"),
        "nvidia-smi --query-gpu=compute_cap --format=csv,noheader": read(
            "nvidia_smi_compute_cap_h100_rtx4090_sample.csv"
        ),
        "nvidia-smi": read("nvidia_smi_header_h100_sample.txt"),
    }
    monkeypatch.setattr(probes, "_run", lambda argv: outputs.get(" ".join(argv), ""))
    monkeypatch.setattr(probes, "_hip", lambda: None)
    (tmp_path / ".info").mkdir()
    (tmp_path / ".info" / "version").write_text(read("rocm_info_version_624_sample.txt"))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path))


def test_supported_configs_from_recorded_outputs(recorded_tools):
    assert as_dict(AMDPlugin.get_supported_configs()) == {
        "gfx_arch": (["gfx90a", "gfx1100"], True),
        "rocm_major": (["6"], False),
        "isa_build": (["targeted", "fat"], False),
    }
    assert as_dict(NvidiaPlugin.get_supported_configs()) == {
        "sm_arch": (["90_real", "89_real"], True),
        "cuda_major": (["13", "12", "11"], False),
        "isa_build": (["targeted", "fat"], False),
    }


def test_runtime_serves_older_build_majors():
    """ROCm 7 runs HIP 6 builds (and prefers its own); ROCm 5 only ROCm 5 builds; a CUDA 13
    driver runs cu13, cu12 and cu11 builds."""
    assert AMDPlugin.majors_served(["7"]) == ["7", "6"]
    assert AMDPlugin.majors_served(["6"]) == ["6"]
    assert AMDPlugin.majors_served(["5"]) == ["5"]
    assert AMDPlugin.majors_served(["6", "7"]) == ["7", "6"]
    assert AMDPlugin.majors_served([]) == []
    assert NvidiaPlugin.majors_served(["13"]) == ["13", "12", "11"]
    amd = as_dict(AMDPlugin.configs(["gfx942"], ["7"]))
    assert amd["rocm_major"] == (["7", "6"], False)


def test_cli_prints_properties(recorded_tools, capsys):
    assert provider_main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "amd :: gfx_arch :: gfx90a" in lines and "nvidia :: sm_arch :: 89_real" in lines


def test_no_gpu_reports_nothing(monkeypatch, tmp_path):
    """The live probes on a machine without GPU tools (this one): nothing, no error."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path))
    monkeypatch.setattr(probes, "_hip", lambda: None)
    assert AMDPlugin.get_supported_configs() == []
    assert NvidiaPlugin.get_supported_configs() == []
    assert provider_main([]) == 1


def test_runtime_unknown_keeps_isas_without_major():
    """ISAs but no runtime major: no rocm_major config, so no variant fits (fails closed)."""
    assert "rocm_major" not in as_dict(AMDPlugin.configs(["gfx942"], []))
    assert AMDPlugin.configs([], ["6"]) == []


def test_all_configs_cover_the_build_lists():
    from build_wheels import AMD_ALL, NVIDIA_ALL

    amd, nvidia = as_dict(AMDPlugin.get_all_configs()), as_dict(NvidiaPlugin.get_all_configs())
    assert set(AMD_ALL) <= set(amd["gfx_arch"][0])
    assert {f"{a[3:]}_real" for a in NVIDIA_ALL} <= set(nvidia["sm_arch"][0])


def test_variantlib_loads_the_plugins(monkeypatch):
    """variantlib runs the plugins in its subprocess and checks them against its protocol;
    the machine has no GPU, so nothing is supported (and nothing fails)."""
    pytest.importorskip("variantlib")
    from variantlib.plugins.loader import DictPluginLoader

    monkeypatch.setenv("PYTHONPATH", str(PROVIDER_DIR))
    monkeypatch.setenv("PATH", "/nonexistent")  # as on a machine without GPU tools
    apis = {
        "amd": "graphkiln_variant_provider.plugin:AMDPlugin",
        "nvidia": "graphkiln_variant_provider.plugin:NvidiaPlugin",
    }
    with DictPluginLoader(apis, venv_python_executable=None) as loader:
        all_configs = loader.get_all_configs()
        assert {c.name for c in all_configs["amd"].configs} == {
            "gfx_arch",
            "rocm_major",
            "isa_build",
        }
        assert "90_real" in all_configs["nvidia"].configs[0].values
        assert loader.get_supported_configs() == {}


def test_entry_points_name_the_namespaces():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    project = tomllib.loads((PROVIDER_DIR / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["variant_plugins"] == {
        "amd": "graphkiln_variant_provider.plugin:AMDPlugin",
        "nvidia": "graphkiln_variant_provider.plugin:NvidiaPlugin",
    }
