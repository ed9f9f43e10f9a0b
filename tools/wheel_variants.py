# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""graphkiln's wheel variants (the PEP 825 draft, as variantlib 0.2.2 implements it): the
variant properties and label of a build flavor, the `variant.json` of a variant wheel and the
index-level `<name>-<version>-variants.json` that merges them.

    amd :: gfx_arch :: gfx942        one value per ISA (the fat wheel: every supported ISA)
    amd :: rocm_major :: 6           nvidia :: sm_arch :: 90_real, nvidia :: cuda_major :: 13
    amd :: isa_build :: targeted     or `fat`: the provider prefers `targeted`

The JSON is written with the standard library in variantlib's own layout (its to_str():
sorted keys, 4-space indent; the tests compare the two byte for byte), so the wheel tools do
not need variantlib; where it is installed, validate_*() also check the files with it.
The provider plugins are providers/graphkiln-variant-provider.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from build_wheels import Flavor

SCHEMA_URL = "https://variants-schema.wheelnext.dev/v0.2.0.json"  # variantlib 0.2.2's
DIST_INFO_FILENAME = "variant.json"
PROVIDER_REQUIREMENT = "graphkiln-variant-provider>=0.1,<1"
PROVIDERS = {
    "amd": "graphkiln_variant_provider.plugin:AMDPlugin",
    "nvidia": "graphkiln_variant_provider.plugin:NvidiaPlugin",
}
# Every graphkiln variant file names both providers, in this order: variantlib merges the
# files of one release only when their namespace priorities agree.
NAMESPACE_PRIORITIES = ["amd", "nvidia"]
# The draft's label charset (variantlib: [0-9a-z._]+). Longer readable labels give way to
# the variant hash (8 hex digits, variantlib's default label); 16 is our own cap.
LABEL_RE = re.compile(r"[0-9a-z._]+")
MAX_LABEL = 16

Property = tuple[str, str, str]  # (namespace, feature, value)


def flavor_properties(flavor: Flavor) -> list[Property]:
    """The variant properties of a GPU build flavor, sorted as variantlib sorts them."""
    if flavor.backend == "cpu":
        raise ValueError("the CPU wheel is published as a plain (non-variant) wheel")
    major = re.sub(r"^\D+", "", flavor.backend)
    if flavor.platform == "amd":
        isas = [("amd", "gfx_arch", isa) for isa in flavor.expected_isas]
        props = [*isas, ("amd", "rocm_major", major)]
    else:
        isas = [
            ("nvidia", "sm_arch", f"{isa.removeprefix('sm_')}_real") for isa in flavor.expected_isas
        ]
        props = [*isas, ("nvidia", "cuda_major", major)]
    props.append((flavor.platform, "isa_build", "fat" if flavor.fat else "targeted"))
    return sorted(set(props))


def variant_hash(props: list[Property]) -> str:
    """variantlib's VariantDescription.hexdigest: sha256 of the sorted `a :: b :: c` lines."""
    digest = hashlib.sha256()
    for prop in sorted(props):
        digest.update(f"{' :: '.join(prop)}\n".encode())
    return digest.hexdigest()[:8]


def flavor_label(flavor: Flavor) -> str:
    """rocm6 (fat), rocm6_gfx942, cu13_sm90; the variant hash when longer than MAX_LABEL."""
    label = "_".join(
        [flavor.backend, *([] if flavor.fat else [a.replace("_", "") for a in flavor.archs])]
    )
    if len(label) > MAX_LABEL or not LABEL_RE.fullmatch(label):
        return variant_hash(flavor_properties(flavor))
    return label


def _variant_dict(props: list[Property]) -> dict[str, dict[str, list[str]]]:
    tree: dict[str, dict[str, list[str]]] = {}
    for namespace, feature, value in sorted(props):
        tree.setdefault(namespace, {}).setdefault(feature, []).append(value)
    return tree


def _document(variants: dict[str, dict]) -> str:
    data = {
        "$schema": SCHEMA_URL,
        "default-priorities": {"namespace": list(NAMESPACE_PRIORITIES)},
        "providers": {
            namespace: {"plugin-api": api, "requires": [PROVIDER_REQUIREMENT]}
            for namespace, api in PROVIDERS.items()
        },
        "variants": variants,
    }
    return json.dumps(data, indent=4, sort_keys=True)


def dist_info_json(flavor: Flavor) -> tuple[str, str]:
    """(label, the wheel's `*.dist-info/variant.json` text) of a GPU build flavor."""
    label = flavor_label(flavor)
    return label, _document({label: _variant_dict(flavor_properties(flavor))})


def merge_variants(dist_infos: dict[str, str]) -> str:
    """The index-level `*-variants.json` of one release from {wheel name: its variant.json}:
    the union of their variants; the same label with other properties, or two labels for
    the same properties, is an error (variantlib's generate-index-json rules)."""
    variants: dict[str, dict] = {}
    labels_of: dict[str, str] = {}
    for wheel, text in sorted(dist_infos.items()):
        data = json.loads(text)
        expected = json.loads(_document({}))
        for key in ("default-priorities", "providers"):
            if data.get(key) != expected[key]:
                raise ValueError(f"{wheel}: its variant.json {key} differ from this tool's")
        for label, tree in data["variants"].items():
            if variants.setdefault(label, tree) != tree:
                raise ValueError(f"{wheel}: variant {label!r} differs from an earlier wheel's")
            key = json.dumps(tree, sort_keys=True)
            if labels_of.setdefault(key, label) != label:
                raise ValueError(
                    f"{wheel}: variants {labels_of[key]!r} and {label!r} have the same properties"
                )
    return _document(variants)


def variants_json_name(wheel_name: str) -> str:
    """graphkiln-0.1.0-cp311-...-rocm6_gfx942.whl -> graphkiln-0.1.0-variants.json"""
    name, version = wheel_name.split("-")[:2]
    return f"{name}-{version}-variants.json"


def variant_label_of(wheel_name: str) -> str | None:
    """The variant label of a wheel's file name (name-ver[-build]-py-abi-plat-label.whl)."""
    parts = wheel_name.removesuffix(".whl").split("-")
    has_build = len(parts) > 2 and parts[2][:1].isdigit()
    return parts[-1] if len(parts) == 6 + has_build else None


def validate_dist_info(text: str, label: str) -> None:
    """Check a variant.json with variantlib, where installed (raises its ValidationError)."""
    try:
        from variantlib.variant_dist_info import VariantDistInfo
    except ImportError:
        return
    VariantDistInfo(text, expected_label=label)


def validate_variants_json(text: str) -> None:
    """Check an index-level *-variants.json with variantlib, where installed."""
    try:
        from variantlib.variants_json import VariantsJson
    except ImportError:
        return
    VariantsJson(json.loads(text))


def write_variants_json(folder: Path, wheels: list[Path], read) -> list[Path]:
    """Write `<name>-<version>-variants.json` into `folder` for each release among the variant
    `wheels`; `read(wheel)` gives a wheel's variant.json text."""
    releases: dict[str, dict[str, str]] = {}
    for wheel in wheels:
        releases.setdefault(variants_json_name(wheel.name), {})[wheel.name] = read(wheel)
    written = []
    for name, dist_infos in sorted(releases.items()):
        text = merge_variants(dist_infos)
        validate_variants_json(text)
        (folder / name).write_text(text)
        written.append(folder / name)
    return written
