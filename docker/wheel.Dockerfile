# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# ROCm wheels: one ISA (GPU_ARCH=gfx942) or fat (GPU_ARCH=all), one wheel per CPython of the
# base, exported with --output (docker/build-wheels.sh runs this with docker or buildah):
#   docker build -f docker/wheel.Dockerfile --build-arg GPU_ARCH=gfx942 \
#     --output type=local,dest=dist .
# BASE_IMAGE is the toolchain: a ROCm 6.4+ image with hipcc, clang and Python with pip (the
# public default; its wheels get that image's glibc floor), or the local base that
# docker/make-rocm-root.sh makes from Debian packages (ROCm 6.4 / clang 21, host code against
# a glibc 2.31 sysroot, CPython 3.11 and the build requirements inside: manylinux_2_31 and no
# network needed), as CI does: BASE_IMAGE=localhost/graphkiln-rocm-base.
ARG BASE_IMAGE=rocm/dev-ubuntu-24.04:6.4.1

# the tag is in BASE_IMAGE (older hadolint cannot see through the argument)
# hadolint ignore=DL3006
FROM ${BASE_IMAGE} AS build
ARG GPU_ARCH=all
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV HIP_PLATFORM=amd
WORKDIR /src
COPY . .
RUN docker/wheel-entry.sh "${GPU_ARCH}"

FROM scratch AS export
COPY --from=build /src/dist/ /
