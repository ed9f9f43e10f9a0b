# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""graphkiln's environment variables (GRAPHKILN_*), each with its meaning: VARIABLES names
every one (`graphkiln doctor` prints those set). Python code reads them through `get()`, which
refuses a name not listed here, with two exceptions that read os.environ themselves:
targets/gpu/target.py (GRAPHKILN_GPU_NHWC) and serving/ray.py (GRAPHKILN_NUM_THREADS, to size
a replica). Those marked below as read by the C++ core are read there (getenv), not here.
Not graphkiln's, so not listed: XDG_CACHE_HOME (the default folder of the tuning database and
of the plan secret), CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES (which serving/triton.py sets
for a Triton instance)."""

from __future__ import annotations

import os

VARIABLES = {
    "GRAPHKILN_NUM_THREADS": "threads for the cpu target, an integer >= 1 (default: physical "
    "cores; more than the CPUs this process may run on is lowered "
    "to that count, with a warning)",
    "GRAPHKILN_ADAPT_THREADS": "0 keeps a cpu program on its thread count when other "
    "processes keep the cores busy (default: runs drop to one thread then; see "
    "targets/cpu/threads.py)",
    "GRAPHKILN_MAX_CONCURRENCY": "how many runs of one compiled program may execute at once "
    "(execution contexts per program; default: the physical "
    "cores on cpu, 4 on gpu; compile(..., max_concurrency=N) "
    "wins); callers beyond it wait",
    "GRAPHKILN_PLAN_CACHE_SIZE": "how many plans (one per input shape) a compiled cpu or "
    "gpu program keeps, least recently used dropped first "
    "(default 32; compile(..., plan_cache_size=N) wins)",
    "GRAPHKILN_CORE_DIR": "development: load graphkiln._core from this CMake build folder",
    "GRAPHKILN_ONEDNN_IMPL": "1 prints the oneDNN implementation each cpu kernel chose when "
    "it is built (read by the C++ core)",
    "GRAPHKILN_CPU_WINOGRAD": "0: 3x3 stride-1 Conv steps stay on oneDNN's direct kernels "
    "(default: Winograd F(4x4, 3x3) where its cost model says it pays); always: Winograd for "
    "every step it can serve; avx2: the same with its AVX2 build even on AVX-512 CPUs (both "
    "for tests; read by the C++ core when a kernel is built)",
    "GRAPHKILN_CPU_ATTENTION_TILES": "0: the cpu Attention kernel's Q K^T and P V products "
    "run on oneDNN's sgemm (default on AVX-512 CPUs: graphkiln's register tiles; read by the "
    "C++ core when a kernel is built)",
    "GRAPHKILN_TRACE_COMPILE": "1 prints the IR after each compiler pass, with its time",
    "GRAPHKILN_DISABLE_PASSES": "comma-separated pass names the pass manager skips",
    "GRAPHKILN_TUNING_DB": "path of the kernel-tuning database (default: "
    "$XDG_CACHE_HOME/graphkiln/tuning.sqlite, XDG_CACHE_HOME "
    "defaulting to ~/.cache; see graphkiln/tuning/README.md)",
    "GRAPHKILN_GPU_DUMP_SRC": "folder where generated GPU kernel sources are written",
    # read by the C++ core's gpu kernels (src/gpu) when a plan is built
    "GRAPHKILN_KERNEL_CACHE": "folder of compiled generated GPU kernels (default "
    "$XDG_CACHE_HOME/graphkiln/kernels; 'off' disables the cache)",
    "GRAPHKILN_GPU_JIT": "0: Pointwise steps run the register-program interpreter instead of "
    "kernels generated and compiled with NVRTC / hipRTC",
    "GRAPHKILN_GPU_FLASH": "0: Attention steps run the unfused kernel (two products and a "
    "softmax) instead of the fused one",
    "GRAPHKILN_GPU_MMA_ATTENTION": "0: Attention steps run the scalar fused kernel instead of "
    "the tensor-core ones (float16 / bfloat16, and large "
    "float32 steps; NVIDIA)",
    "GRAPHKILN_GPU_CUDNN": "0: Conv steps do not use cuDNN (im2col + GEMM instead)",
    "GRAPHKILN_GPU_NHWC": "0: half-precision convolutions stay NCHW (default: channels-last "
    "where cuDNN runs Conv steps)",
    "GRAPHKILN_GPU_DEVICE": "which GPU the gpu target runs programs on (0, 1, ...; "
    "compile(..., device=N) wins; default: the current device)",
    "GRAPHKILN_GPU_CUDNN_VERBOSE": "1 prints each Conv step's cuDNN choice when it is built",
    "GRAPHKILN_GPU_CUDNN_CANDIDATES": "how many of cuDNN's heuristic algorithms an untuned "
    "Conv step times when it is built, keeping the "
    "fastest (1-8; default 1: none timed, the first that "
    "runs is kept, the same on every build)",
    "GRAPHKILN_CUDNN_LIBRARY": "path of libcudnn.so.9 to load (default: the library path, "
    "then beside libcublas and in pip's nvidia/cudnn/lib)",
    "GRAPHKILN_GPU_MIOPEN": "0: Conv steps do not use MIOpen on AMD builds (conv.hip's kernel "
    "instead)",
    "GRAPHKILN_GPU_MIOPEN_VERBOSE": "1 prints each Conv step's MIOpen choice when it is built",
    "GRAPHKILN_MIOPEN_LIBRARY": "path of libMIOpen.so.1 to load (default: the library path, then "
    "$ROCM_PATH/lib and /opt/rocm/lib)",
    "GRAPHKILN_FAKE_GPU_ARCH": "tests: the device check sees GPUs of these ISAs "
    "(gfx1100,sm_90; none)",
    "GRAPHKILN_MAX_TENSOR_BYTES": "largest tensor (bytes) an imported model may declare or "
    "infer; larger ones are refused (default 4 GiB)",
}


def get(name: str, default: str | None = None) -> str | None:
    if name not in VARIABLES:
        raise KeyError(f"{name} is not a graphkiln environment variable (see graphkiln.env)")
    return os.environ.get(name, default)


def set_variables() -> dict[str, str]:
    """The graphkiln variables set in this process (for `graphkiln doctor`)."""
    return {k: os.environ[k] for k in VARIABLES if k in os.environ}
