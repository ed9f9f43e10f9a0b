# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Import graphkiln._core, the C++ core, after making sure its shared libraries load.

_core links libdnnl.so.3 from the `onednn-cpu-gomp` wheel, which installs it in
<prefix>/lib of the environment (the venv, ~/.local, /usr/local). _core's RPATH points
there; when the layout differs (e.g. a --target install), we load it by path first."""

from __future__ import annotations

import ctypes
import importlib
import os
import sys

_LIBRARY = "libdnnl.so.3"


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


def _load_from(folder: str):
    """Development: graphkiln._core from a CMake build folder (GRAPHKILN_CORE_DIR)."""
    import glob
    import importlib.util

    found = sorted(glob.glob(os.path.join(folder, "_core*.so")))
    if not found:
        raise ImportError(f"GRAPHKILN_CORE_DIR={folder!r} holds no _core*.so")
    spec = importlib.util.spec_from_file_location("graphkiln._core", found[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["graphkiln._core"] = module
    return module


def load_core():
    """graphkiln._core, or ImportError saying what is missing."""
    if "graphkiln._core" in sys.modules:
        return sys.modules["graphkiln._core"]
    from . import env

    folder = env.get("GRAPHKILN_CORE_DIR")
    if folder:
        _preload()
        return _load_from(folder)
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
