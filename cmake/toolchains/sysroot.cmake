# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# Host code against an older C library than the build machine's: the sysroot's own GCC
# (its libstdc++ and libgomp, the OpenMP runtime oneDNN uses too) for the C++ sources, and
# clang (the one that compiles the HIP device code, new enough for today's AMD ISAs) with
# --sysroot for the HIP sources, so the module needs only the sysroot's glibc and libstdc++
# symbol versions and the wheel's manylinux tag is the sysroot's.
#   GRAPHKILN_SYSROOT  the sysroot (default /opt/sysroot: docker/make-rocm-root.sh puts
#                      Debian bullseye there: glibc 2.31, GCC 10)
#   GRAPHKILN_HIP_CLANG  the clang++ for HIP (default: clang++ on PATH)
# Used by docker/wheel.Dockerfile through CMAKE_TOOLCHAIN_FILE. ROCm's headers come after
# the sysroot's (clang's -idirafter of its ROCm path), never before them.
set(GRAPHKILN_SYSROOT "$ENV{GRAPHKILN_SYSROOT}")
if(NOT GRAPHKILN_SYSROOT)
  set(GRAPHKILN_SYSROOT /opt/sysroot)
endif()
if(NOT EXISTS "${GRAPHKILN_SYSROOT}/usr/include/stdio.h")
  message(FATAL_ERROR "sysroot.cmake: ${GRAPHKILN_SYSROOT} has no usr/include/stdio.h "
    "(set GRAPHKILN_SYSROOT to a root with libc6-dev and libstdc++-dev)")
endif()
set(CMAKE_SYSROOT "${GRAPHKILN_SYSROOT}")
set(_gk_clang "$ENV{GRAPHKILN_HIP_CLANG}")
if(NOT _gk_clang)
  find_program(_gk_clang NAMES clang++ clang++-21 clang++-20 clang++-19 REQUIRED)
endif()
file(GLOB _gk_gxx "${GRAPHKILN_SYSROOT}/usr/bin/g++-[0-9]*")
file(GLOB _gk_gcc "${GRAPHKILN_SYSROOT}/usr/bin/gcc-[0-9]*")
if(NOT _gk_gxx OR NOT _gk_gcc)
  message(FATAL_ERROR "sysroot.cmake: ${GRAPHKILN_SYSROOT}/usr/bin has no gcc-N / g++-N")
endif()
list(GET _gk_gxx 0 CMAKE_CXX_COMPILER)
list(GET _gk_gcc 0 CMAKE_C_COMPILER)
set(CMAKE_HIP_COMPILER "${_gk_clang}")
# the build system's binutils: the sysroot's own (bullseye's) cannot run outside it (their
# libbfd is not on this system's library path)
foreach(_gk_tool AR RANLIB STRIP NM OBJCOPY OBJDUMP READELF ADDR2LINE)
  string(TOLOWER "${_gk_tool}" _gk_name)
  if(EXISTS "/usr/bin/${_gk_name}")
    set(CMAKE_${_gk_tool} "/usr/bin/${_gk_name}" CACHE FILEPATH "the build system's ${_gk_name}")
  endif()
endforeach()
# packages (pybind11, oneDNN, Python, hip-lang) live outside the sysroot: search both
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
