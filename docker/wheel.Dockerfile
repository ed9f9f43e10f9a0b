# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# ROCm wheels on manylinux_2_28: one ISA (GPU_ARCH=gfx942) or fat (GPU_ARCH=all), one wheel
# per CPython, exported to the host with --output:
#   docker build -f docker/wheel.Dockerfile --build-arg GPU_ARCH=gfx942 \
#     --build-arg ROCM_VERSION=6.4.1 --output type=local,dest=dist .
# A fat wheel of the whole supported list (gfx950, gfx12xx) needs ROCm 7.
# manylinux images roll forward; pass a dated tag (quay.io/pypa/manylinux_2_28_x86_64) to
# rebuild a release exactly.
ARG MANYLINUX_TAG=latest
ARG ROCM_VERSION=6.4.1

FROM quay.io/pypa/manylinux_2_28_x86_64:${MANYLINUX_TAG} AS build
ARG ROCM_VERSION
ARG GPU_ARCH=all
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# The HIP compiler, headers, runtime and device libraries from AMD's EL8 repository.
# Package versions follow the repository chosen by the version ARG above.
# hadolint ignore=DL3041
RUN printf '[rocm]\nname=ROCm %s\nbaseurl=https://repo.radeon.com/rocm/el8/%s/main\nenabled=1\ngpgcheck=1\ngpgkey=https://repo.radeon.com/rocm/rocm.gpg.key\n' \
      "${ROCM_VERSION}" "${ROCM_VERSION}" > /etc/yum.repos.d/rocm.repo \
    && dnf install -y hip-devel hipcc rocm-device-libs rocm-llvm rocminfo \
    && dnf clean all
ENV ROCM_PATH=/opt/rocm \
    HIP_PLATFORM=amd \
    PATH=/opt/rocm/bin:$PATH
WORKDIR /src
COPY . .
RUN docker/build-wheels.sh "${GPU_ARCH}"

FROM scratch AS export
COPY --from=build /src/dist/ /
