# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Import graphkiln._core, the C++ core, after making sure its shared libraries load.

_core links libdnnl.so.3 from the `onednn-cpu-gomp` wheel, which installs it in
<prefix>/lib of the environment (the venv, ~/.local, /usr/local). _core's RPATH points
there; when the layout differs (e.g. a --target install), we load it by path first.

A ROCm build does not link the HIP runtime: it carries two modules, graphkiln/_core (with
the GPU code; its HIP references are left for the process to provide) and
graphkiln/_cpu_only/_core (the same module without GPU code). The loader opens the newest
libamdhip64 installed (ROCm 7, 6, or 5) into the global namespace and imports the GPU
module; without a runtime, or with one the module cannot use, it imports the CPU-only module
and `gpu_runtime_problem()` says why (graphkiln doctor prints it, the gpu target refuses
with it). The CUDA build links its runtime statically and has one module."""

from __future__ import annotations

import ctypes
import importlib
import os
import sys

_LIBRARY = "libdnnl.so.3"
# Newest first: a HIP 6 build runs on ROCm 6 and 7; a HIP 5 build only finds ROCm 5's
# symbols in .so.5 (importing it on a newer runtime fails, and the CPU-only module serves).
HIP_RUNTIMES = ("libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5")
_gpu_runtime_problem: str | None = None
_hip_runtime_path: str | None = None


def gpu_runtime_problem() -> str | None:
    """Why the GPU module of a ROCm build was not loaded (no HIP runtime here, or one it
    cannot use), after load_core(); None when it was loaded or the build has none."""
    return _gpu_runtime_problem


def hip_runtime_loaded() -> str | None:
    """The libamdhip64 a ROCm build opened (the path or name given to the loader), after
    load_core(); None for other builds or when none was found."""
    return _hip_runtime_path


def _hip_runtime() -> str:
    """Open libamdhip64 with RTLD_GLOBAL (newest first: the library path, then $ROCM_PATH/lib
    and /opt/rocm/lib); its path, or OSError naming what was tried."""
    roots = [r for r in (os.environ.get("ROCM_PATH"), "/opt/rocm") if r]  # ROCm's own variable
    tried = []
    for name in HIP_RUNTIMES:
        for path in [name] + [os.path.join(r, "lib", name) for r in roots]:
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                tried.append(path)
                continue
            return _mapped_file(name) or path
    raise OSError(
        f"no HIP runtime found ({', '.join(HIP_RUNTIMES)} on the library path, "
        f"$ROCM_PATH/lib, /opt/rocm/lib): install ROCm 6 or 7, or put its lib folder on "
        "LD_LIBRARY_PATH"
    )


def _mapped_file(name: str) -> str | None:
    """The file the dynamic loader mapped for library `name` (a symlink's real target), from
    /proc/self/maps; None where that is not readable."""
    stem = name.split(".so")[0] + ".so"
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if os.path.basename(path).startswith(stem):
                    return path
    except OSError:
        pass
    return None


def _candidate_dirs() -> list[str]:
    dirs = [os.path.join(sys.prefix, "lib"), os.path.join(sys.base_prefix, "lib")]
    try:
        import importlib.metadata as md

        dist = md.distribution("onednn-cpu-gomp")
        for f in dist.files or ():
            if str(f).endswith(_LIBRARY):
                dirs.insert(0, str(dist.locate_file(f).resolve().parent))
    except Exception:  # noqa: BLE001 - metadata is only a hint
        pass
    return dirs


def _preload() -> None:
    for folder in _candidate_dirs():
        path = os.path.join(folder, _LIBRARY)
        if os.path.exists(path):
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            return


def _module_file(folder: str) -> str | None:
    import glob

    found = sorted(glob.glob(os.path.join(folder, "_core*.so")))
    return found[0] if found else None


def _import_file(path: str):
    """The extension module at `path` as graphkiln._core (both files define PyInit__core)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("graphkiln._core", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["graphkiln._core"] = module
    return module


def _load_rocm_build(gpu_module, cpu_only_file: str):
    """A ROCm build: the GPU module when a HIP runtime serves it, else the CPU-only one.
    `gpu_module` imports the GPU module (by path or by name)."""
    global _gpu_runtime_problem, _hip_runtime_path
    try:
        runtime = _hip_runtime()
    except OSError as exc:
        _gpu_runtime_problem = str(exc)
    else:
        _hip_runtime_path = runtime
        try:
            return gpu_module()
        except ImportError as exc:
            if _LIBRARY in str(exc):
                raise
            _gpu_runtime_problem = (
                f"the HIP runtime {runtime} does not serve this build's GPU code ({exc}); "
                "install the ROCm it was built for (graphkiln doctor names it)"
            )
    sys.modules.pop("graphkiln._core", None)
    return _import_file(cpu_only_file)


def _load_from(folder: str):
    """Development: graphkiln._core from a CMake build folder (GRAPHKILN_CORE_DIR)."""
    found = _module_file(folder)
    if not found:
        raise ImportError(f"GRAPHKILN_CORE_DIR={folder!r} holds no _core*.so")
    cpu_only = _module_file(os.path.join(folder, "cpu_only"))
    if cpu_only:
        return _load_rocm_build(lambda: _import_file(found), cpu_only)
    return _import_file(found)


def load_core():
    """graphkiln._core, or ImportError saying what is missing."""
    if "graphkiln._core" in sys.modules:
        return sys.modules["graphkiln._core"]
    from . import env

    folder = env.get("GRAPHKILN_CORE_DIR")
    if folder:
        _preload()
        return _load_from(folder)
    cpu_only = _module_file(os.path.join(os.path.dirname(__file__), "_cpu_only"))
    if cpu_only:
        _preload()
        return _load_rocm_build(lambda: importlib.import_module("graphkiln._core"), cpu_only)
    try:
        return importlib.import_module("graphkiln._core")
    except ImportError as first:
        if _LIBRARY not in str(first):
            raise
        _preload()
        try:
            return importlib.import_module("graphkiln._core")
        except ImportError as second:
            raise ImportError(
                f"graphkiln's C++ core needs {_LIBRARY} from the onednn-cpu-gomp "
                f"package: pip install onednn-cpu-gomp ({second})"
            ) from second
