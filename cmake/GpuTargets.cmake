# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# GPU_TARGETS decides the GPU platform and the ISAs compiled in, here and nowhere else:
#   ""          CPU-only build (the default)
#   gfx90a;...  AMD, through the HIP language (CMAKE_HIP_ARCHITECTURES)
#   sm_90;...   NVIDIA, the same .hip sources compiled as CUDA (CMAKE_CUDA_ARCHITECTURES)
#   native      what the build machine has (tools/detect_gpu_targets.py); error if none
#   all         the supported list of the platform (GRAPHKILN_GPU_PLATFORM picks it:
#               amd by default, nvidia when HIP_PLATFORM=nvidia), cut to what the
#               toolchain found here can compile
# AMDGPU_TARGETS is accepted as an alias. Never a silent build-host default: nothing is
# detected unless `native` is asked for.
set(GPU_TARGETS "" CACHE STRING "GPU ISAs to build for: gfx*/sm_* list, native, all, or empty (CPU only)")
if(NOT GPU_TARGETS AND AMDGPU_TARGETS)
  set(GPU_TARGETS "${AMDGPU_TARGETS}")
endif()

set(GRAPHKILN_AMD_ALL gfx908 gfx90a gfx942 gfx950 gfx1030 gfx1100 gfx1101 gfx1102 gfx1151 gfx1200
    gfx1201)
set(GRAPHKILN_NVIDIA_ALL sm_80 sm_86 sm_89 sm_90 sm_100 sm_120)
set(_gk_accepted
  "an empty GPU_TARGETS (CPU only), `native`, `all`, or a ;-separated list of one platform: "
  "AMD gfx* (e.g. gfx90a;gfx942) or NVIDIA sm_* (e.g. sm_90)")

# AMD ISAs this ROCm can compile: those with a device-library ISA file (oclc_isa_version_90a.bc).
function(_gk_amd_supported out)
  set(_roots "$ENV{ROCM_PATH}" /opt/rocm /usr)
  foreach(_root IN LISTS _roots)
    if(_root)
      file(GLOB _bc "${_root}/amdgcn/bitcode/oclc_isa_version_*.bc"
                    "${_root}/lib/*/amdgcn/bitcode/oclc_isa_version_*.bc"
                    "${_root}/lib/llvm/lib/clang/*/lib/amdgcn/bitcode/oclc_isa_version_*.bc"
                    "${_root}/lib/llvm-*/lib/clang/*/amdgcn/bitcode/oclc_isa_version_*.bc")
      if(_bc)
        list(GET _bc 0 _first)
        get_filename_component(_dir "${_first}" DIRECTORY)
        set(GRAPHKILN_HIP_ROCM_ROOT "${_root}" PARENT_SCOPE)
        set(GRAPHKILN_HIP_DEVICE_LIBS "${_dir}" PARENT_SCOPE)
        break()
      endif()
    endif()
  endforeach()
  set(_isas "")
  foreach(_file IN LISTS _bc)
    string(REGEX REPLACE ".*oclc_isa_version_([0-9a-f]+)\\.bc$" "gfx\\1" _isa "${_file}")
    list(APPEND _isas ${_isa})
  endforeach()
  set(${out} "${_isas}" PARENT_SCOPE)
endfunction()

# NVIDIA ISAs the nvcc found here can compile (nvcc --list-gpu-code).
function(_gk_nvidia_supported out)
  find_program(_gk_nvcc nvcc HINTS "$ENV{CUDA_PATH}/bin" /usr/local/cuda/bin)
  set(_codes "")
  if(_gk_nvcc)
    execute_process(COMMAND "${_gk_nvcc}" --list-gpu-code OUTPUT_VARIABLE _out
                    OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
    if(_rc EQUAL 0)
      string(REGEX MATCHALL "sm_[0-9]+[a-z]?" _codes "${_out}")
    endif()
  endif()
  set(${out} "${_codes}" PARENT_SCOPE)
endfunction()

set(_gk_targets "${GPU_TARGETS}")
if(_gk_targets STREQUAL "native")
  find_package(Python REQUIRED COMPONENTS Interpreter)
  execute_process(
    COMMAND "${Python_EXECUTABLE}" "${CMAKE_CURRENT_LIST_DIR}/../tools/detect_gpu_targets.py"
    OUTPUT_VARIABLE _gk_targets OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0 OR NOT _gk_targets)
    message(FATAL_ERROR "GPU_TARGETS=native: no GPU found on this machine (tried hip-python, "
      "offload-arch, rocminfo, nvidia-smi). Name the ISAs instead, e.g. GPU_TARGETS=gfx90a.")
  endif()
  message(STATUS "GPU_TARGETS=native found: ${_gk_targets}")
elseif(_gk_targets STREQUAL "all")
  if("$ENV{HIP_PLATFORM}" STREQUAL "nvidia")
    _gk_nvidia_supported(_have)
    set(_want ${GRAPHKILN_NVIDIA_ALL})
  else()
    _gk_amd_supported(_have)
    set(_want ${GRAPHKILN_AMD_ALL})
  endif()
  set(_gk_targets "")
  foreach(_isa IN LISTS _want)
    if(_isa IN_LIST _have)
      list(APPEND _gk_targets ${_isa})
    endif()
  endforeach()
  if(NOT _gk_targets)
    message(FATAL_ERROR "GPU_TARGETS=all: no ISA of [${_want}] can be compiled by the "
      "toolchain found here (ROCm device libraries or nvcc missing?)")
  endif()
  message(STATUS "GPU_TARGETS=all: ${_gk_targets} (the supported list cut to this toolchain)")
endif()

set(GRAPHKILN_GPU_PLATFORM "none")
set(_gk_arch_numbers "")
foreach(_isa IN LISTS _gk_targets)
  if(_isa MATCHES "^gfx[0-9]+[0-9a-f]*$")
    set(_platform amd)
  elseif(_isa MATCHES "^sm_([0-9]+)$")
    set(_platform nvidia)
    list(APPEND _gk_arch_numbers "${CMAKE_MATCH_1}-real")
  else()
    message(FATAL_ERROR "GPU_TARGETS='${GPU_TARGETS}': '${_isa}' is not an ISA. Accepted: ${_gk_accepted}")
  endif()
  if(NOT GRAPHKILN_GPU_PLATFORM STREQUAL "none" AND NOT GRAPHKILN_GPU_PLATFORM STREQUAL _platform)
    message(FATAL_ERROR "GPU_TARGETS='${GPU_TARGETS}' mixes AMD and NVIDIA ISAs. Accepted: ${_gk_accepted}")
  endif()
  set(GRAPHKILN_GPU_PLATFORM ${_platform})
endforeach()
list(REMOVE_DUPLICATES _gk_targets)
string(REPLACE ";" "," GRAPHKILN_GPU_TARGETS_STRING "${_gk_targets}")
set(GRAPHKILN_GPU_ISAS "${_gk_targets}" CACHE INTERNAL "the ISAs compiled in (read by tools/build_wheels.py)")

if(GRAPHKILN_GPU_PLATFORM STREQUAL "amd")
  _gk_amd_supported(_have)
  foreach(_isa IN LISTS _gk_targets)
    if(NOT _isa IN_LIST _have)
      message(FATAL_ERROR "GPU_TARGETS: ${_isa} cannot be compiled by the ROCm found here "
        "(device libraries for: ${_have}). Use a newer ROCm or drop ${_isa}.")
    endif()
  endforeach()
  # ROCm in /opt/rocm is found by CMake itself; a distribution's ROCm (Debian: /usr, device
  # libraries under lib/<triplet>/amdgcn) needs its paths spelled out for clang and CMake.
  if(GRAPHKILN_HIP_DEVICE_LIBS MATCHES "^(.*/lib/[^/]+)/amdgcn/bitcode$")
    list(APPEND CMAKE_PREFIX_PATH "${CMAKE_MATCH_1}/cmake")
    string(APPEND CMAKE_HIP_FLAGS
      " --rocm-path=${GRAPHKILN_HIP_ROCM_ROOT} --hip-device-lib-path=${GRAPHKILN_HIP_DEVICE_LIBS}")
  elseif(CMAKE_SYSROOT)
    # with --sysroot (cmake/toolchains/sysroot.cmake) clang looks for ROCm inside the sysroot
    string(APPEND CMAKE_HIP_FLAGS
      " --rocm-path=${GRAPHKILN_HIP_ROCM_ROOT} --hip-device-lib-path=${GRAPHKILN_HIP_DEVICE_LIBS}")
  endif()
  if(NOT CMAKE_HIP_COMPILER AND NOT DEFINED ENV{HIPCXX})
    find_program(_gk_hipconfig hipconfig HINTS "${GRAPHKILN_HIP_ROCM_ROOT}/bin")
    if(_gk_hipconfig)
      execute_process(COMMAND "${_gk_hipconfig}" --hipclangpath OUTPUT_VARIABLE _clang_dir
                      OUTPUT_STRIP_TRAILING_WHITESPACE)
      file(GLOB _gk_clang "${_clang_dir}/clang++" "${_clang_dir}/clang++-[0-9]*")
      if(_gk_clang)
        list(GET _gk_clang 0 CMAKE_HIP_COMPILER)
      endif()
    endif()
  endif()
  set(CMAKE_HIP_PLATFORM amd)
  set(CMAKE_HIP_ARCHITECTURES ${_gk_targets})
  # No HIP runtime on the link line (see graphkiln_add_gpu_sources): loaded at run time.
  set(CMAKE_HIP_RUNTIME_LIBRARY NONE)
  enable_language(HIP)
  # Older clangs (ROCm 5.x's clang 15) add -lamdhip64 to every HIP link (--hip-link), and
  # CMake records it among the HIP implicit libraries, which it then puts on the C++ link
  # line of any target holding HIP objects: drop it there too.
  list(REMOVE_ITEM CMAKE_HIP_IMPLICIT_LINK_LIBRARIES amdhip64)
  # The HIP major version of this toolchain decides which runtimes may load the module:
  # a HIP 6 build runs on ROCm 6 and 7 (libamdhip64.so.6 / .so.7), a HIP 5 build on ROCm 5.
  string(REGEX MATCH "^[0-9]+" GRAPHKILN_HIP_MAJOR "${CMAKE_HIP_COMPILER_ROCM_VERSION}")
  if(NOT GRAPHKILN_HIP_MAJOR)
    find_program(_gk_hipconfig_v hipconfig HINTS "${GRAPHKILN_HIP_ROCM_ROOT}/bin")
    if(_gk_hipconfig_v)
      execute_process(COMMAND "${_gk_hipconfig_v}" --version OUTPUT_VARIABLE _gk_hip_version
                      OUTPUT_STRIP_TRAILING_WHITESPACE)
      string(REGEX MATCH "^[0-9]+" GRAPHKILN_HIP_MAJOR "${_gk_hip_version}")
    endif()
  endif()
  if(NOT GRAPHKILN_HIP_MAJOR)
    set(GRAPHKILN_HIP_MAJOR 6)
  endif()
elseif(GRAPHKILN_GPU_PLATFORM STREQUAL "nvidia")
  _gk_nvidia_supported(_have)
  foreach(_isa IN LISTS _gk_targets)
    if(NOT _isa IN_LIST _have)
      message(FATAL_ERROR "GPU_TARGETS: ${_isa} cannot be compiled by the nvcc found here "
        "(it lists: ${_have}). Use another CUDA toolkit or drop ${_isa}.")
    endif()
  endforeach()
  # -real: SASS for exactly the ISAs asked for, no PTX, so a wheel carries what its label says.
  set(CMAKE_CUDA_ARCHITECTURES ${_gk_arch_numbers})
  set(CMAKE_CUDA_RUNTIME_LIBRARY Static)  # the wheel then needs only the driver (libcuda)
  # nvcc's host compiler is the C++ compiler: another g++ first on PATH (seen on the lent
  # GPU machine) can default to another std::string ABI, and the module then crashes when
  # host and CUDA objects pass strings.
  if(NOT CMAKE_CUDA_HOST_COMPILER AND NOT DEFINED ENV{CUDAHOSTCXX})
    set(CMAKE_CUDA_HOST_COMPILER "${CMAKE_CXX_COMPILER}")
  endif()
  enable_language(CUDA)
  # The module is linked by the C++ compiler, which also gets CUDA's implicit link
  # directories. Those can name another toolchain (the lent GPU machine's nvcc finds
  # /opt/gcc): its libstdc++ would then be linked into the module beside the process's own,
  # and std::ostream code crashes. Keep only the CUDA toolkit's (cudart comes by full path).
  list(FILTER CMAKE_CUDA_IMPLICIT_LINK_DIRECTORIES INCLUDE REGEX "cuda")
endif()
# The module links with the C++ compiler like the CPU build (pybind11 may use GCC's LTO,
# which clang or nvcc cannot link): the GPU objects need no device link step.
set(CMAKE_HIP_LINKER_PREFERENCE_PROPAGATES OFF)
set(CMAKE_CUDA_LINKER_PREFERENCE_PROPAGATES OFF)
message(STATUS "graphkiln GPU platform: ${GRAPHKILN_GPU_PLATFORM}; ISAs: ${_gk_targets}")

# The GPU sources, compiled into `target` when GPU_TARGETS is non-empty. They are written in
# HIP; for NVIDIA they compile as CUDA (nvcc -x cu) through src/gpu/hip_compat.hpp.
function(graphkiln_add_gpu_sources target)
  if(GRAPHKILN_GPU_PLATFORM STREQUAL "none")
    return()
  endif()
  set(_src "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../src")
  # One kernel family per file; registry.hip is the dispatch table that names them all.
  set(_sources
    "${_src}/gpu/probe.hip"
    "${_src}/gpu/registry.hip"
    "${_src}/gpu/executor.hip"
    "${_src}/gpu/blas.hip"
    "${_src}/gpu/blas_lt.hip"
    "${_src}/gpu/copy.hip"
    "${_src}/gpu/pointwise.hip"
    "${_src}/gpu/rtc.hip"
    "${_src}/gpu/kernel_cache.cpp"
    "${_src}/gpu/gather.hip"
    "${_src}/gpu/gemm.hip"
    "${_src}/gpu/matmul_nbits.hip"
    "${_src}/gpu/conv.hip"
    "${_src}/gpu/cudnn.hip"
    "${_src}/gpu/conv_cudnn.hip"
    "${_src}/gpu/conv_epilogue.hip"
    "${_src}/gpu/miopen.hip"
    "${_src}/gpu/conv_miopen.hip"
    "${_src}/gpu/pool.hip"
    "${_src}/gpu/softmax.hip"
    "${_src}/gpu/layer_norm.hip"
    "${_src}/gpu/reduce.hip"
    "${_src}/gpu/attention.hip"
    "${_src}/gpu/attention_flash.hip"
    "${_src}/gpu/attention_mma.hip"
    "${_src}/gpu/attention_mma_f32.hip"
    "${_src}/gpu/bytes.hip"
    "${_src}/gpu/loss.hip"
    "${_src}/gpu/data.hip"
    "${_src}/gpu/axis.hip"
    "${_src}/gpu/control.hip"
    "${_src}/gpu/host_step.hip")
  add_library(graphkiln_gpu STATIC ${_sources})
  target_include_directories(graphkiln_gpu PUBLIC "${_src}")
  # the runtime compiler's cache key names graphkiln's version (src/gpu/rtc.hip)
  target_compile_definitions(graphkiln_gpu PRIVATE GRAPHKILN_VERSION="${PROJECT_VERSION}")
  if(GRAPHKILN_GPU_PLATFORM STREQUAL "nvidia")
    set_source_files_properties(${_sources} PROPERTIES LANGUAGE CUDA)
  endif()
  if(GRAPHKILN_GPU_PLATFORM STREQUAL "nvidia")
    find_package(CUDAToolkit REQUIRED)
    # cuBLAS is loaded at run time (src/gpu/blas.hip): the toolkit used to build need not
    # carry it, and the wheel needs only the driver plus CUDA's or PyTorch's libcublas.
    target_link_libraries(graphkiln_gpu PUBLIC CUDA::cudart_static ${CMAKE_DL_LIBS})
    target_compile_options(graphkiln_gpu PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-O3>)
  else()
    # The HIP runtime is not linked: graphkiln/_native.py loads libamdhip64 (.so.7 or .so.6,
    # whichever ROCm is installed; .so.5 for a ROCm 5 build) with RTLD_GLOBAL before it
    # imports this module, whose HIP references are then unversioned and bind to either.
    # A linked libamdhip64 would pin one soname and its symbol versions, and a machine
    # without ROCm could not import the module at all (the wheel's _core_cpu serves it).
    # hipRTC, rocBLAS are found at run time too (src/gpu/rtc.hip, blas.hip).
    # (The HIP headers come with the compiler's own -idirafter of its ROCm: never an
    # -isystem of ROCm's prefix, which for a distribution's ROCm is /usr/include and would
    # put that system's C library headers before a --sysroot's; cmake/toolchains/.)
    target_compile_definitions(graphkiln_gpu PUBLIC
      $<TARGET_PROPERTY:hip-lang::amdhip64,INTERFACE_COMPILE_DEFINITIONS>)
    target_link_libraries(graphkiln_gpu PUBLIC ${CMAKE_DL_LIBS})
    message(STATUS "graphkiln HIP runtime: loaded at run time (libamdhip64.so.${GRAPHKILN_HIP_MAJOR}+)")
  endif()
  target_compile_definitions(${target} PUBLIC GRAPHKILN_WITH_GPU=1)
  target_link_libraries(${target} PUBLIC graphkiln_gpu)
endfunction()
