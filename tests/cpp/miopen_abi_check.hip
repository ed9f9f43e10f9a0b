// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Compile-time check of graphkiln's MIOpen declarations (src/gpu/miopen.hpp, used through
// dlopen) against MIOpen's own header: each entry point's arity and, parameter by parameter,
// the kind (pointer, integer or enum, floating point) and size; the enum values; the layout of
// miopenConvAlgoPerf_t. Nothing runs: it compiles or it does not.
//   clang++ -x hip --cuda-host-only -fsyntax-only -std=c++17 -Isrc -I<MIOpen include> \
//     tests/cpp/miopen_abi_check.hip
// docker/wheel-entry.sh runs it before the ROCm wheels are built when MIOpen's header is there.
#include <miopen/miopen.h>

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "gpu/miopen.hpp"

#if !defined(GRAPHKILN_GPU_MIOPEN)
#error "compile as HIP for AMD (-x hip): src/gpu/miopen.hpp declares nothing elsewhere"
#endif

namespace {

namespace ours = graphkiln::gpu::miopen;

// 1 pointer, 2 floating point, 3 integer or enum (both passed in integer registers)
template <class T>
constexpr int kind() {
  return std::is_pointer_v<T>                           ? 1
         : std::is_floating_point_v<T>                  ? 2
         : (std::is_integral_v<T> || std::is_enum_v<T>) ? 3
                                                        : 0;
}

template <class A, class B>
constexpr bool same_abi() {
  return kind<A>() != 0 && kind<A>() == kind<B>() && sizeof(A) == sizeof(B);
}

template <class F>
struct signature;
template <class R, class... A>
struct signature<R (*)(A...)> {
  using result = R;
  using params = std::tuple<A...>;
  static constexpr size_t arity = sizeof...(A);
};

template <class Ours, class Theirs, size_t... I>
constexpr bool params_match(std::index_sequence<I...>) {
  return (same_abi<std::tuple_element_t<I, typename signature<Ours>::params>,
                   std::tuple_element_t<I, typename signature<Theirs>::params>>() &&
          ...);
}

template <class Ours, class Theirs>
constexpr bool matches() {
  using O = signature<Ours>;
  using T = signature<Theirs>;
  if constexpr (O::arity != T::arity) {
    return false;
  } else {
    return same_abi<typename O::result, typename T::result>() &&
           params_match<Ours, Theirs>(std::make_index_sequence<O::arity>{});
  }
}

#define GRAPHKILN_CHECK_ENTRY(slot, function) \
  static_assert(matches<decltype(ours::Api::slot), decltype(&function)>(), #function \
                " does not match graphkiln's declaration (Api::" #slot ", src/gpu/miopen.hpp)")

GRAPHKILN_CHECK_ENTRY(create, miopenCreate);
GRAPHKILN_CHECK_ENTRY(create_with_stream, miopenCreateWithStream);
GRAPHKILN_CHECK_ENTRY(destroy, miopenDestroy);
GRAPHKILN_CHECK_ENTRY(error_string, miopenGetErrorString);
GRAPHKILN_CHECK_ENTRY(version, miopenGetVersion);
GRAPHKILN_CHECK_ENTRY(create_tensor, miopenCreateTensorDescriptor);
GRAPHKILN_CHECK_ENTRY(destroy_tensor, miopenDestroyTensorDescriptor);
GRAPHKILN_CHECK_ENTRY(set_tensor, miopenSetTensorDescriptor);
GRAPHKILN_CHECK_ENTRY(create_conv, miopenCreateConvolutionDescriptor);
GRAPHKILN_CHECK_ENTRY(destroy_conv, miopenDestroyConvolutionDescriptor);
GRAPHKILN_CHECK_ENTRY(init_conv, miopenInitConvolutionDescriptor);
GRAPHKILN_CHECK_ENTRY(set_group_count, miopenSetConvolutionGroupCount);
GRAPHKILN_CHECK_ENTRY(output_dim, miopenGetConvolutionForwardOutputDim);
GRAPHKILN_CHECK_ENTRY(workspace_size, miopenConvolutionForwardGetWorkSpaceSize);
GRAPHKILN_CHECK_ENTRY(find_forward, miopenFindConvolutionForwardAlgorithm);
GRAPHKILN_CHECK_ENTRY(forward, miopenConvolutionForward);

static_assert(ours::kSuccess == miopenStatusSuccess);
static_assert(ours::kHalf == miopenHalf && ours::kFloat == miopenFloat &&
              ours::kBfloat16 == miopenBFloat16);
static_assert(ours::kConvolution == miopenConvolution);
static_assert(sizeof(ours::AlgoPerf) == sizeof(miopenConvAlgoPerf_t));
static_assert(offsetof(ours::AlgoPerf, fwd_algo) == offsetof(miopenConvAlgoPerf_t, fwd_algo));
static_assert(offsetof(ours::AlgoPerf, time) == offsetof(miopenConvAlgoPerf_t, time));
static_assert(offsetof(ours::AlgoPerf, memory) == offsetof(miopenConvAlgoPerf_t, memory));
static_assert(sizeof(ours::AlgoPerf::fwd_algo) == sizeof(miopenConvFwdAlgorithm_t));

}  // namespace
