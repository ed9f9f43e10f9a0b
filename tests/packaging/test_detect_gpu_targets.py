# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""tools/detect_gpu_targets.py and the probes of graphkiln.device, on recorded tool outputs."""

import pytest

from packaging_testing import DATA  # first: tools/ on sys.path
import detect_gpu_targets

device = detect_gpu_targets.load_device_module()  # loaded by path, as CMake does


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_rocminfo_lists_gpu_agents_only():
    found = device.parse_rocminfo(read("rocminfo_cpu_mi210_rx7900.txt"))
    assert [(d.name, d.arch) for d in found] == [
        ("AMD Instinct MI210", "gfx90a"),
        ("AMD Radeon RX 7900 XTX", "gfx1100"),
    ]
    assert device.parse_rocminfo(read("rocminfo_no_gpu_debian_rocm52.txt")) == []


def test_offload_arch_and_nvidia_smi():
    assert [d.arch for d in device.parse_offload_arch(read("offload_arch_two_mi300x.txt"))] == [
        "gfx942",
        "gfx942",
    ]
    found = device.parse_nvidia_smi(read("nvidia_smi_h100_rtx4090.csv"))
    assert [(d.name, d.arch) for d in found] == [
        ("NVIDIA H100 80GB HBM3", "sm_90"),
        ("NVIDIA GeForce RTX 4090", "sm_89"),
    ]
    assert [(d.name, d.arch) for d in device.parse_nvidia_smi(read("nvidia_smi_h200.csv"))] == [
        ("NVIDIA H200", "sm_90")
    ]
    assert [d.arch for d in device.parse_nvidia_smi("8.6\n")] == ["sm_86"]


@pytest.mark.parametrize(
    "raw, arch",
    [
        ("gfx90a:sramecc+:xnack-", "gfx90a"),
        ("9.0", "sm_90"),
        ("12.0", "sm_120"),
        ("gfx1100", "gfx1100"),
    ],
)
def test_normalize_arch(raw, arch):
    assert device.normalize_arch(raw) == arch


def fake_tools(monkeypatch, outputs: dict):
    """Make the probes see `outputs` ({tool: stdout}; a missing tool prints nothing)."""
    monkeypatch.setattr(device, "_run", lambda argv: outputs.get(argv[0]))
    monkeypatch.setattr(device, "_hip_python_devices", lambda: [])


def test_probe_order_amd_tools_before_nvidia_smi(monkeypatch, capsys):
    fake_tools(
        monkeypatch,
        {
            "rocminfo": read("rocminfo_cpu_mi210_rx7900.txt"),
            "nvidia-smi": read("nvidia_smi_h200.csv"),
        },
    )
    assert detect_gpu_targets.main([]) == 0
    assert capsys.readouterr().out.strip() == "gfx90a;gfx1100"
    fake_tools(
        monkeypatch,
        {
            "offload-arch": read("offload_arch_two_mi300x.txt"),
            "rocminfo": read("rocminfo_cpu_mi210_rx7900.txt"),
        },
    )
    assert detect_gpu_targets.main([]) == 0
    assert capsys.readouterr().out.strip() == "gfx942"


def test_nvidia_smi_last_and_nothing_found(monkeypatch, capsys):
    fake_tools(monkeypatch, {"nvidia-smi": read("nvidia_smi_h100_rtx4090.csv")})
    assert detect_gpu_targets.main(["-v"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == "sm_90;sm_89" and "nvidia-smi" in captured.err
    fake_tools(monkeypatch, {})
    assert detect_gpu_targets.main([]) == 1
    assert capsys.readouterr().out == ""
