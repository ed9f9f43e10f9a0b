// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// One f32 matmul M x K by K x N timed through oneDNN: the weights packed as the primitive
// wants (what graphkiln's MatMul kernel does with constant weights) and plain, and
// dnnl_sgemm; median of 30 executions. Used by onednn_release_compare.sh.
//   matmul M K N
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

template <typename F>
double median_ms(F f) {
  std::vector<double> times;
  for (int i = 0; i < 30; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: matmul M K N\n");
    return 2;
  }
  const int M = atoi(argv[1]), K = atoi(argv[2]), N = atoi(argv[3]);
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  std::vector<float> A(size_t(M) * K), B(size_t(K) * N), C(size_t(M) * N);
  for (size_t i = 0; i < A.size(); ++i) A[i] = float(i % 7) * 0.1f;
  for (size_t i = 0; i < B.size(); ++i) B[i] = float(i % 5) * 0.1f;
  auto ad = memory::desc({M, K}, dt::f32, tag::ab), cd = memory::desc({M, N}, dt::f32, tag::ab);
  for (auto wt : {tag::any, tag::ab}) {
    auto bd = memory::desc({K, N}, dt::f32, wt);
    auto pd = matmul::primitive_desc(eng, ad, bd, cd);
    memory Am(ad, eng, A.data()), Cm(cd, eng, C.data());
    memory Bu(memory::desc({K, N}, dt::f32, tag::ab), eng, B.data()), Bm(pd.weights_desc(), eng);
    reorder(Bu, Bm).execute(s, Bu, Bm);
    s.wait();
    matmul mm(pd);
    const double ms = median_ms([&] {
      mm.execute(s, {{DNNL_ARG_SRC, Am}, {DNNL_ARG_WEIGHTS, Bm}, {DNNL_ARG_DST, Cm}});
      s.wait();
    });
    std::printf("matmul %s %-24s %.3f ms %.1f GFLOPS\n", wt == tag::any ? "packed" : "plain ",
                pd.impl_info_str(), ms, 2.0 * M * N * K / ms / 1e6);
  }
  const double ms = median_ms(
      [&] { dnnl_sgemm('N', 'N', M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, C.data(), N); });
  std::printf("sgemm %-26s %.3f ms %.1f GFLOPS\n", "", ms, 2.0 * M * N * K / ms / 1e6);
}
