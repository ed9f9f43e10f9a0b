# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# NVIDIA wheels on manylinux_2_28: the same .hip sources compiled as CUDA by nvcc, one ISA
# (GPU_ARCH=sm_90) or fat (GPU_ARCH=all), one wheel per CPython:
#   docker build -f docker/cuda.wheel.Dockerfile --build-arg GPU_ARCH=sm_90 \
#     --output type=local,dest=dist .
# CUDA_VERSION is the package suffix of NVIDIA's EL8 repository (13-0 = CUDA 13.0).
# manylinux images roll forward; pass a dated tag (quay.io/pypa/manylinux_2_28_x86_64) to
# rebuild a release exactly.
ARG MANYLINUX_TAG=latest
ARG CUDA_VERSION=13-0

FROM quay.io/pypa/manylinux_2_28_x86_64:${MANYLINUX_TAG} AS build
ARG CUDA_VERSION
ARG GPU_ARCH=all
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Package versions follow the repository chosen by the version ARG above.
# hadolint ignore=DL3041
RUN dnf config-manager --add-repo \
      https://developer.download.nvidia.com/compute/cuda/repos/rhel8/x86_64/cuda-rhel8.repo \
    && dnf install -y "cuda-nvcc-${CUDA_VERSION}" "cuda-cudart-devel-${CUDA_VERSION}" \
    && dnf clean all
ENV PATH=/usr/local/cuda/bin:$PATH \
    CUDA_PATH=/usr/local/cuda \
    HIP_PLATFORM=nvidia
WORKDIR /src
COPY . .
RUN docker/wheel-entry.sh "${GPU_ARCH}"

FROM scratch AS export
COPY --from=build /src/dist/ /
