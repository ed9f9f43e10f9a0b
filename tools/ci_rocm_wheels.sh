#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# The ROCm 6.4 / 7 wheel stage of CI (run by .ci/run after tools/ci_wheels.sh), with the
# project's own wheel image (docker/wheel.Dockerfile) built by buildah on the local base that
# docker/make-rocm-root.sh makes from Debian packages (no image registry needed):
#   - in one image build: the CPU wheel, the gfx942 wheel and the fat ROCm wheel, host code
#     against the base's glibc 2.31 sysroot, each repaired and checked by tools/build_wheels.py
#     inside the image;
#   - here: check_wheel again (the fat wheel must carry exactly GPU_TARGETS=all's AMD ISAs),
#     the CPU wheel's manylinux tag (reported; it must be older than 2_35);
#   - the gfx942 wheel in a fresh venv: `graphkiln doctor` with a simulated gfx942 says the
#     wheel matches, with a simulated gfx1100 it gives the actionable error, and the cpu
#     target runs (and matches ref) in both;
#   - the variant wheels (PEP 825 draft) of the gfx942 and fat wheels and the index's
#     *-variants.json, made by tools/make_variant_wheel.py and make_index.py, checked by
#     variantlib.
# The base root and image are made once per run (kept in a temporary folder, removed after).
# Needs root (debootstrap, chroot, buildah), Debian's mirror and PyPI.
# Usage: tools/ci_rocm_wheels.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist/ci-rocm}
rm -rf "$out" && mkdir -p "$out"
t_start=$SECONDS

if [ "$(id -u)" != 0 ]; then
  echo "ci_rocm_wheels: needs root (debootstrap, chroot and buildah's vfs storage)" >&2
  exit 1
fi
missing=()
command -v buildah >/dev/null || missing+=(buildah)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

work=$(mktemp -d /var/tmp/graphkiln-ci-rocm.XXXXXX)
export ROCM_ROOT=$work/root BASE_IMAGE=local
storage=(--storage-driver "${BUILDAH_STORAGE_DRIVER:-vfs}")
cleanup() {
  buildah "${storage[@]}" rmi -f localhost/graphkiln-rocm-base >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
cleanup  # a base image left by an earlier run is not reused
mkdir -p "$work"

docker/build-wheels.sh cpu,gfx942,all "$out"
ls -l "$out"

python3 tools/check_wheel.py "$out"/graphkiln-*+rocm*.gfx942-*.whl
fat=$(find "$out" -maxdepth 1 -name 'graphkiln-*+rocm[0-9]-*.whl' | head -1)
[ -n "$fat" ] || { echo "ci_rocm_wheels: no fat ROCm wheel in $out" >&2; exit 1; }
all_amd=$(python3 -c 'import sys; sys.path.insert(0, "tools"); import build_wheels; print(",".join(build_wheels.AMD_ALL))')
python3 tools/check_wheel.py --expect "$all_amd" "$fat"

cpu_wheel=$(find "$out" -maxdepth 1 -name 'graphkiln-*.whl' ! -name '*+*' | head -1)
[ -n "$cpu_wheel" ] || { echo "ci_rocm_wheels: no CPU wheel in $out" >&2; exit 1; }
cpu_tag=$(basename "$cpu_wheel" .whl | sed 's/.*-\(manylinux_[0-9]*_[0-9]*\)_x86_64.*/\1/')
echo "== the CPU wheel's platform tag: $cpu_tag ($(basename "$cpu_wheel"))"
python3 - "$cpu_tag" <<'PY'
import re
import sys

found = re.fullmatch(r"manylinux_(\d+)_(\d+)", sys.argv[1])
if not found or (int(found.group(1)), int(found.group(2))) >= (2, 35):
    raise SystemExit(f"ci_rocm_wheels: the CPU wheel's tag {sys.argv[1]} is not older than manylinux_2_35")
PY

echo "== gfx942 wheel in a fresh venv: doctor with gfx942 and gfx1100 simulated"
venv=$work/venv
python3 -m venv "$venv"
gfx942_wheels=("$out"/graphkiln-*+rocm*.gfx942-*.whl)
"$venv/bin/pip" install -q "${gfx942_wheels[0]}"
(
  cd /tmp
  GRAPHKILN_FAKE_GPU_ARCH=gfx942 "$venv/bin/graphkiln" doctor | tee "$work/doctor-gfx942.txt"
  grep -q "every GPU is covered" "$work/doctor-gfx942.txt" \
    || { echo "ci_rocm_wheels: doctor does not say the gfx942 wheel matches a gfx942" >&2; exit 1; }
  set +e
  GRAPHKILN_FAKE_GPU_ARCH=gfx1100 "$venv/bin/graphkiln" doctor > "$work/doctor-gfx1100.txt" 2>&1
  set -e
  cat "$work/doctor-gfx1100.txt"
  for needed in gfx1100 gfx942 GPU_TARGETS=native; do
    grep -q -- "$needed" "$work/doctor-gfx1100.txt" \
      || { echo "ci_rocm_wheels: doctor's gfx1100 report does not name $needed" >&2; exit 1; }
  done
  for arch in gfx942 gfx1100; do
    GRAPHKILN_FAKE_GPU_ARCH=$arch "$venv/bin/python" - "$arch" <<'PY'
import sys

import numpy as np

import graphkiln
from graphkiln.cli.common import EXAMPLE_MODEL

prog = graphkiln.parse_onnx(EXAMPLE_MODEL)
rng = np.random.default_rng(0)
feeds = {n: rng.standard_normal(prog.get_parameter_shapes()[n].dims).astype(np.float32)
         for n in prog.get_parameter_names()}
got = graphkiln.parse_onnx(EXAMPLE_MODEL).compile("cpu").run(feeds)
want = prog.compile("ref").run(feeds)
assert all(np.allclose(g, w, rtol=1e-4, atol=1e-5) for g, w in zip(got, want))
print(f"{sys.argv[1]} simulated: the cpu target runs and matches ref:", [g.shape for g in got])
PY
  done
)
echo "== variant wheels (PEP 825 draft) of the gfx942 and fat wheels, and the index, checked by variantlib"
"$venv/bin/pip" install -q "variantlib>=0.2.2,<0.3"
rm -rf "$out/variants" "$work/site"
"$venv/bin/python" tools/make_variant_wheel.py "${gfx942_wheels[0]}" "$fat" --out "$out/variants"
cp "$cpu_wheel" "$out/variants/"
"$venv/bin/python" tools/make_index.py "$out/variants" "$work/site"
"$venv/bin/python" - "$work/site" <<'PY'
import sys
from pathlib import Path

import variantlib  # noqa: F401 - the validate_* calls below check with it only where installed

sys.path.insert(0, "tools")
from make_variant_wheel import read_variant_json  # noqa: E402
from wheel_variants import validate_dist_info, validate_variants_json, variant_label_of  # noqa: E402

site = Path(sys.argv[1])
checked = []
for wheel in sorted(site.rglob("*.whl")):
    label = variant_label_of(wheel.name)
    if label:
        validate_dist_info(read_variant_json(wheel), label)
        checked.append(wheel.name)
indexes = sorted(site.rglob("*-variants.json"))
for index in indexes:
    validate_variants_json(index.read_text())
if len(checked) < 2 or not indexes:
    raise SystemExit(f"ci_rocm_wheels: expected 2+ variant wheels and an index, got {checked} {indexes}")
print("valid:", ", ".join(checked + [str(i.relative_to(site)) for i in indexes]))
PY
echo "ci_rocm_wheels: CPU, gfx942 and fat ROCm wheels built with the wheel image, checked and installed in $((SECONDS - t_start)) s"
