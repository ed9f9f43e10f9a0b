# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Type stub of the C++ extension graphkiln._core."""

def build_info() -> dict[str, object]:
    """version, compiler, gpu_platform ("none" | "amd" | "nvidia"), gpu_targets (ISAs),
    gpu_toolkit ("HIP 5.2.21153" | "CUDA 13.0" | "" when CPU only). No GPU runtime call."""

def gpu_probe_info() -> dict[str, object]:
    """runtime_version, driver_version, device_count, kernel_ran, error. Initializes the GPU
    runtime; raises RuntimeError in a CPU-only build."""

class Executor:
    """A cpu plan built into kernels (targets/native/plan.py writes its arguments)."""

    def __init__(
        self,
        steps: list[dict],
        constants: list,
        arena_bytes: int,
        inputs: list[tuple],
        outputs: list[tuple],
        num_threads: int,
        max_contexts: int = 1,
    ) -> None: ...
    def run(self, inputs: list) -> list:
        """C-contiguous arrays of the planned dtypes and shapes in; new arrays out. The GIL
        is released while the kernels run. Safe from several threads at once: each run takes
        an execution context (arena, kernels' scratch) from a pool of at most max_contexts,
        waiting when all are busy, and cores from the process-wide budget."""
    def set_profiling(self, on: bool) -> None:
        """Time every step of the following runs."""
    def step_times(self) -> list[tuple[str, str, float, int]]:
        """[(kernel, node name, total ms, runs)] per step, while profiling."""
    def packed_constants(self) -> list[tuple[int, list[tuple[str, object]]]]:
        """[(step index, [(layout, read-only uint8 array)])]: the constants kernels packed at
        build time (oneDNN weights), saved with a compiled program."""
    @property
    def reused_packings(self) -> int:
        """How many saved packed constants the kernels took as they are."""
    @property
    def arena_bytes(self) -> int: ...
    @property
    def num_steps(self) -> int: ...
    @property
    def num_threads(self) -> int: ...
    @property
    def max_contexts(self) -> int: ...
    @property
    def contexts_created(self) -> int:
        """Execution contexts built so far (each holds one arena)."""

def set_core_budget(cores: int) -> None:
    """The cores concurrent cpu runs may hold at once, process-wide."""

def core_budget() -> int:
    """The cores concurrent cpu runs may hold at once."""

def cpu_kernels() -> list[str]:
    """Names of the CPU kernels compiled in."""

def max_threads() -> int:
    """OpenMP's thread count for the calling thread."""

def cpu_isa() -> str:
    """The CPU ISA oneDNN dispatches to (its effective ISA), e.g. avx512_core."""

def onednn_version() -> str:
    """The oneDNN library's version, e.g. 3.2.1."""

# Only in builds with GPU_TARGETS (targets/gpu builds it; see src/gpu/executor.hpp):
class GpuExecutor:
    """A gpu plan built into GPU kernels: constants uploaded once, kernels shared; each run
    takes an execution context (device arena, workspace, staging buffers, its own stream,
    BLAS / cuDNN handles and captured graph) from a pool of at most max_contexts, waiting
    when all are busy. run() takes numpy arrays (copied in) or device arrays with
    __cuda_array_interface__ / __dlpack__ (read in place; copied in while a graph replays)
    and returns numpy arrays. With use_graphs, a context's second run is captured into a
    HIP/CUDA graph that its later runs replay."""

    def __init__(
        self,
        steps: list[dict],
        constants: list,
        arena_bytes: int,
        inputs: list[tuple],
        outputs: list[tuple],
        builtin_blas: bool = False,
        use_graphs: bool = True,
        max_contexts: int = 1,
    ) -> None: ...
    def run(self, inputs: list) -> list: ...
    def profile(self, inputs: list) -> list[tuple[str, float]]:
        """One run kernel by kernel, each step timed on the device: [(step, ms)]."""
    @property
    def graph_state(self) -> str:
        """'off', 'not captured yet', 'replaying' or 'kernel by kernel: <why>'."""
    @property
    def arena_bytes(self) -> int: ...
    @property
    def num_steps(self) -> int: ...
    @property
    def workspace_bytes(self) -> int: ...
    @property
    def device_bytes(self) -> int: ...
    @property
    def device(self) -> str:
        """GPU 0 'NVIDIA H200'"""
    @property
    def blas(self) -> str:
        """cuBLAS, rocBLAS, or graphkiln's tiled kernel (and why)."""
    @property
    def max_contexts(self) -> int: ...
    @property
    def contexts_created(self) -> int:
        """Execution contexts built so far."""
    @property
    def bytes_per_context(self) -> int:
        """Device bytes one execution context holds."""

def gpu_kernels() -> list[str]:
    """Names of the GPU kernels compiled in (GPU builds only)."""

def gpu_cudnn_status() -> str:
    """Whether Conv steps can use cuDNN here: 'cudnn' or 'off: <why>' (GPU builds only)."""

def gpu_miopen_status() -> str:
    """Whether Conv steps can use MIOpen here: 'miopen' or 'off: <why>' (GPU builds only)."""

def gpu_lt_gemm_calls() -> int:
    """How many GEMMs ran as one cuBLASLt call with their bias / ReLU epilogue in this
    process (GPU builds only; 0 where cuBLASLt is not used)."""

def gpu_jit_status() -> str:
    """What compiles generated GPU kernels here: 'nvrtc 13.0, sm_90, cache <dir>' or
    'off: <why>' (GPU builds only)."""
