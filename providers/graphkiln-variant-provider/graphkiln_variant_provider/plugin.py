# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The variant provider plugins (variantlib 0.2.2's `PluginType` protocol, without importing
variantlib): `AMDPlugin` (namespace `amd`) and `NvidiaPlugin` (namespace `nvidia`).

A graphkiln variant wheel says, for example,

    amd :: gfx_arch :: gfx942        the ISAs it carries code for (any one must be here)
    amd :: rocm_major :: 6           the HIP major it was built with (it loads libamdhip64.so.6
                                     or .so.7 at run time)
    amd :: isa_build :: targeted     built for chosen ISAs (`fat`: every supported one)

`get_supported_configs()` lists what this machine has, most preferred first: the ISAs of its
GPUs, the runtime majors whose wheels its runtime serves (its own first: ROCm 7 also serves
HIP 6 builds, a CUDA 13 driver also cu12 and cu11 ones), and `targeted` before `fat`, so that
an installer ranks the wheel built for the GPU above the fat wheel. No GPU found: no configs,
so no GPU variant fits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import probes

# Every value a graphkiln variant wheel may carry (get_all_configs validates wheels with it).
AMD_ISAS = (
    "gfx900",
    "gfx906",
    "gfx908",
    "gfx90a",
    "gfx940",
    "gfx941",
    "gfx942",
    "gfx950",
    "gfx1010",
    "gfx1030",
    "gfx1100",
    "gfx1101",
    "gfx1102",
    "gfx1150",
    "gfx1151",
    "gfx1200",
    "gfx1201",
)
NVIDIA_SM_ARCHS = tuple(
    f"{sm}_real" for sm in (70, 75, 80, 86, 87, 89, 90, 100, 101, 103, 110, 120, 121)
)
ROCM_MAJORS = ("5", "6", "7")
CUDA_MAJORS = ("11", "12", "13")
ISA_BUILDS = ("targeted", "fat")  # preference order


@dataclass(frozen=True)
class FeatureConfig:
    """variantlib's VariantFeatureConfigType: a feature, its values (best first), and whether
    one wheel may list several values (then any one of them must be supported)."""

    name: str
    values: list[str] = field(default_factory=list)
    multi_value: bool = False


class _GpuPlugin:
    """The configs of one GPU platform; subclasses name the namespace, features and probes."""

    namespace = ""
    isa_feature = ""
    major_feature = ""
    all_isas: tuple[str, ...] = ()
    all_majors: tuple[str, ...] = ()
    isa_probe = ""  # the functions of .probes that find them
    major_probe = ""
    # Supported values depend on the machine: not usable as a build-time (AOT) provider.
    all_properties_compatible = False

    @classmethod
    def configs(cls, isas: list[str], majors: list[str]) -> list[FeatureConfig]:
        """The supported configs for these probe results (pure: the tests call it)."""
        if not isas:
            return []
        found = [FeatureConfig(cls.isa_feature, list(isas), multi_value=True)]
        served = cls.majors_served(majors)
        if served:
            found.append(FeatureConfig(cls.major_feature, served))
        found.append(FeatureConfig("isa_build", list(ISA_BUILDS)))
        return found

    # The oldest build major the runtime of a newer major still serves (see majors_served).
    oldest_served = 0

    @classmethod
    def majors_served(cls, majors: list[str]) -> list[str]:
        """The build majors whose wheels these runtime majors run, newest first: each major
        down to oldest_served (a major below it serves only its own builds)."""
        served: list[str] = []
        for major in sorted({int(m) for m in majors}, reverse=True):
            lowest = cls.oldest_served if major >= cls.oldest_served else major
            served += [str(m) for m in range(major, lowest - 1, -1) if str(m) not in served]
        return served

    @classmethod
    def get_all_configs(cls) -> list[FeatureConfig]:
        return [
            FeatureConfig(cls.isa_feature, list(cls.all_isas), multi_value=True),
            FeatureConfig(cls.major_feature, list(cls.all_majors)),
            FeatureConfig("isa_build", list(ISA_BUILDS)),
        ]

    @classmethod
    def get_supported_configs(cls) -> list[FeatureConfig]:
        isas = getattr(probes, cls.isa_probe)()
        return cls.configs(isas, getattr(probes, cls.major_probe)() if isas else [])


class AMDPlugin(_GpuPlugin):
    namespace = "amd"
    isa_feature = "gfx_arch"
    major_feature = "rocm_major"
    all_isas = AMD_ISAS
    all_majors = ROCM_MAJORS
    isa_probe = "amd_isas"
    major_probe = "rocm_majors"
    # HIP 6 builds load libamdhip64.so.7 too (graphkiln/_native.py); ROCm 5 builds need ROCm 5
    oldest_served = 6


class NvidiaPlugin(_GpuPlugin):
    namespace = "nvidia"
    isa_feature = "sm_arch"
    major_feature = "cuda_major"
    all_isas = NVIDIA_SM_ARCHS
    all_majors = CUDA_MAJORS
    isa_probe = "nvidia_sm_archs"
    major_probe = "cuda_majors"
    # the driver runs code built for its CUDA major and older ones (cudart is linked statically)
    oldest_served = 11


PLUGINS = (AMDPlugin, NvidiaPlugin)
