# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# oneDNN for the CPU target's convolution, matmul and pooling kernels.
#
# graphkiln uses the PyPI wheels `onednn-devel-cpu-gomp` (headers, CMake config; a build
# requirement) and `onednn-cpu-gomp` (libdnnl.so.3, GNU OpenMP only; a run-time
# dependency). Wheels put them under <prefix>/include and <prefix>/lib, where <prefix> is
# the environment the wheel was installed into (a venv, the build-isolation overlay, ~/.local).
# We ask Python where the devel wheel's dnnl-config.cmake is; DNNL_DIR overrides.
if(NOT DNNL_DIR)
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c [=[
import importlib.metadata as md
for name in ("onednn-devel-cpu-gomp", "onednn-devel"):
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        continue
    for f in dist.files or ():
        if str(f).endswith("dnnl-config.cmake"):
            print(dist.locate_file(f).resolve().parent)
            raise SystemExit(0)
]=]
    OUTPUT_VARIABLE _gk_dnnl_dir OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_gk_dnnl_dir)
    set(DNNL_DIR "${_gk_dnnl_dir}")
  endif()
endif()
find_package(DNNL CONFIG QUIET NAMES dnnl DNNL)
if(NOT DNNL_FOUND AND NOT dnnl_FOUND)
  message(FATAL_ERROR
    "graphkiln: oneDNN not found. The CPU target needs it: `pip install onednn-devel-cpu-gomp` "
    "(pip install . does this in its isolated build environment), or set DNNL_DIR to the "
    "folder holding dnnl-config.cmake.")
endif()
message(STATUS "graphkiln: oneDNN from ${DNNL_DIR}")
