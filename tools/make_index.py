#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Lay a folder of graphkiln wheels out as PEP 503 "simple" indexes, one per flavor:

    OUT/cpu/                 the CPU wheels          pip install graphkiln --index-url URL/cpu/
    OUT/rocm6/               fat ROCm 6 wheels       ... --index-url URL/rocm6/
    OUT/rocm6/gfx90a/        one ISA each            ... --index-url URL/rocm6/gfx90a/
    OUT/cu13/, OUT/cu13/sm_90/

Each index holds `index.html` (the project list) and `graphkiln/index.html` (the files, with
`#sha256=` fragments) beside copies of the wheels; OUT/index.html lists the indexes.
The flavor of a wheel is its version label (tools/build_wheels.py).
Variant wheels (PEP 825 draft, tools/make_variant_wheel.py) go to OUT/variants/, with the
CPU wheel as the fallback and the release's `graphkiln-<version>-variants.json`
(tools/wheel_variants.py), for variant-enabled installers.

    python tools/make_index.py dist/ site/
"""

from __future__ import annotations

import argparse
import hashlib
import html
import shutil
import sys
from collections import defaultdict
from pathlib import Path

from build_wheels import parse_label, wheel_version
from make_variant_wheel import read_variant_json
from wheel_variants import variant_label_of, write_variants_json

PROJECT = "graphkiln"
VARIANT_INDEX = "variants"


def _page(title: str, links: list[tuple[str, str]]) -> str:
    body = "\n".join(
        f'    <a href="{html.escape(href)}">{html.escape(text)}</a><br/>' for href, text in links
    )
    return (
        f'<!DOCTYPE html>\n<html>\n  <head><meta name="pypi:repository-version" '
        f'content="1.0"><title>{html.escape(title)}</title></head>\n  <body>\n'
        f"    <h1>{html.escape(title)}</h1>\n{body}\n  </body>\n</html>\n"
    )


def group_wheels(wheels: list[Path]) -> dict[str, list[Path]]:
    """{index folder: its wheels}; a wheel whose label fits no index is an error."""
    groups: dict[str, list[Path]] = defaultdict(list)
    for wheel in wheels:
        groups[parse_label(wheel_version(wheel.name)).index_dir].append(wheel)
    return dict(sorted(groups.items()))


def write_index(out: Path, folder: str, wheels: list[Path]) -> None:
    project_dir = out / folder / PROJECT
    project_dir.mkdir(parents=True, exist_ok=True)
    links = []
    if folder == VARIANT_INDEX:  # the *-variants.json files are linked like the wheels
        variants = [w for w in wheels if variant_label_of(w.name)]
        wheels = wheels + write_variants_json(project_dir, variants, read_variant_json)
    for wheel in sorted(wheels, key=lambda w: w.name):
        if wheel.parent != project_dir:
            shutil.copyfile(wheel, project_dir / wheel.name)
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        links.append((f"{wheel.name}#sha256={digest}", wheel.name))
    (project_dir / "index.html").write_text(_page(f"Links for {PROJECT}", links))
    (out / folder / "index.html").write_text(
        _page(f"graphkiln {folder} index", [(f"{PROJECT}/", PROJECT)])
    )


def make_index(wheel_dir: Path, out: Path) -> dict[str, list[Path]]:
    wheels = sorted(wheel_dir.glob(f"{PROJECT}-*.whl"))
    if not wheels:
        raise SystemExit(f"make_index: no {PROJECT} wheel in {wheel_dir}")
    variant_wheels = [w for w in wheels if variant_label_of(w.name)]
    groups = group_wheels([w for w in wheels if w not in variant_wheels])
    if variant_wheels:
        groups[VARIANT_INDEX] = variant_wheels + groups.get("cpu", [])
    for folder, members in groups.items():
        write_index(out, folder, members)
    (out / "index.html").write_text(
        _page(
            "graphkiln wheel indexes (pip --index-url <this>/<folder>/)",
            [(f"{folder}/", folder) for folder in groups],
        )
    )
    return groups


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel_dir", type=Path, help="folder holding the built wheels")
    parser.add_argument("out", type=Path, help="where the index tree is written")
    args = parser.parse_args(argv)
    try:
        groups = make_index(args.wheel_dir, args.out)
    except ValueError as exc:
        print(f"make_index: {exc}", file=sys.stderr)
        return 1
    for folder, members in groups.items():
        print(f"{folder}/: {', '.join(w.name for w in members)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
