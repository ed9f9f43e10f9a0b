#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# Build graphkiln wheels with the project's wheel images and copy them out:
#   docker/build-wheels.sh GPU_ARCH [OUT_DIR]
# GPU_ARCH: one ISA (gfx942, sm_90), all (the fat wheel) or cpu; a comma-separated list
# (cpu,gfx942,all) builds those wheels in one image build. sm_* uses cuda.wheel.Dockerfile,
# the others wheel.Dockerfile (ROCm; do not mix the two in one list). OUT_DIR: where the
# wheels go (default dist/).
# Environment:
#   ENGINE      docker or buildah (default: docker when its daemon answers, else buildah,
#               rootful with the vfs storage driver and chroot isolation: what runs here)
#   BASE_IMAGE  the image to build on (default: the Dockerfile's public one); `local` makes
#               the ROCm base from Debian packages first (docker/make-rocm-root.sh) and
#               builds on it: no registry needed
#   ROCM_ROOT   where `local` keeps that root between calls (default /var/tmp/graphkiln-rocm-root)
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:?usage: docker/build-wheels.sh GPU_ARCH [OUT_DIR]}
out=$(mkdir -p "${2:-dist}" && cd "${2:-dist}" && pwd)
case ",$arch," in
  *,sm_*)
    case ",$arch," in *,gfx*|*,all,*) echo "build-wheels: $arch mixes CUDA and ROCm wheels: build them apart" >&2; exit 2 ;; esac
    dockerfile=docker/cuda.wheel.Dockerfile ;;
  *) dockerfile=docker/wheel.Dockerfile ;;
esac

engine=${ENGINE:-}
if [ -z "$engine" ]; then
  if command -v docker >/dev/null && docker info >/dev/null 2>&1; then engine=docker; else engine=buildah; fi
fi
storage=(--storage-driver "${BUILDAH_STORAGE_DRIVER:-vfs}")
base_args=()
if [ "${BASE_IMAGE:-}" = local ]; then
  local_image=localhost/graphkiln-rocm-base
  root=${ROCM_ROOT:-/var/tmp/graphkiln-rocm-root}
  if [ "$engine" = buildah ]; then
    if ! buildah "${storage[@]}" inspect --type image "$local_image" >/dev/null 2>&1; then
      docker/make-rocm-root.sh "$root" "$local_image"
    fi
  else
    docker/make-rocm-root.sh "$root"
    tar -C "$root" --exclude=./proc/* -cf - . | docker import \
      --change 'ENV PATH=/opt/py311/bin:/usr/lib/llvm-21/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'ENV HIP_PLATFORM=amd' - "$local_image" >/dev/null
  fi
  base_args=(--build-arg "BASE_IMAGE=$local_image")
elif [ -n "${BASE_IMAGE:-}" ]; then
  base_args=(--build-arg "BASE_IMAGE=$BASE_IMAGE")
fi

t0=$SECONDS
echo "== build-wheels: $dockerfile GPU_ARCH=$arch with $engine ${base_args[*]}"
if [ "$engine" = docker ]; then
  docker build -f "$dockerfile" --build-arg "GPU_ARCH=$arch" "${base_args[@]}" \
    --output "type=local,dest=$out" .
else
  command -v buildah >/dev/null || { echo "build-wheels: neither docker nor buildah" >&2; exit 1; }
  tag=localhost/graphkiln-wheels-${arch//,/-}
  buildah "${storage[@]}" bud --isolation chroot -f "$dockerfile" --build-arg "GPU_ARCH=$arch" \
    "${base_args[@]}" -t "$tag" .
  container=$(buildah "${storage[@]}" from "$tag")
  mount=$(buildah "${storage[@]}" mount "$container")
  cp "$mount"/*.whl "$out/"
  buildah "${storage[@]}" umount "$container" >/dev/null
  buildah "${storage[@]}" rm "$container" >/dev/null
  buildah "${storage[@]}" rmi "$tag" >/dev/null
fi
echo "== build-wheels: $(find "$out" -maxdepth 1 -name '*.whl' -printf '%f ')in $((SECONDS - t0)) s"
