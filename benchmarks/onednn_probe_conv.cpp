// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// One f32 convolution (batch 1, square image, bias, ReLU post-op) timed through oneDNN with
// the source / destination layouts graphkiln's Conv kernel can ask for: median of 300
// executions after the primitive is built. Used by onednn_release_compare.sh to compare
// oneDNN releases; build it against each release's headers and library.
//   conv [k stride pad oc [ic size]]   (default: 3 2 0 64 3 224, a ResNet-style stem)
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;

int main(int argc, char** argv) {
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  int ic = 3, oc = 64, ih = 224, k = 3, st = 2, pad = 0;
  if (argc > 4) {
    k = atoi(argv[1]);
    st = atoi(argv[2]);
    pad = atoi(argv[3]);
    oc = atoi(argv[4]);
  }
  if (argc > 6) {
    ic = atoi(argv[5]);
    ih = atoi(argv[6]);
  }
  const int oh = (ih + 2 * pad - k) / st + 1;
  memory::dims src{1, ic, ih, ih}, wei{oc, ic, k, k}, dst{1, oc, oh, oh}, bia{oc};
  struct Variant {
    const char* name;
    tag s, d;
  };
  const Variant variants[] = {{"nhwc->nhwc", tag::nhwc, tag::nhwc},
                              {"nchw->nChw16c", tag::nchw, tag::nChw16c}};
  for (const auto& v : variants) {
    try {
      auto sd = memory::desc(src, memory::data_type::f32, v.s);
      auto dd = memory::desc(dst, memory::data_type::f32, v.d);
      auto wd = memory::desc(wei, memory::data_type::f32, tag::any);
      auto bd = memory::desc(bia, memory::data_type::f32, tag::a);
      primitive_attr attr;
      post_ops po;
      po.append_eltwise(algorithm::eltwise_relu, 0, 0);
      attr.set_post_ops(po);
      auto pd = convolution_forward::primitive_desc(eng, prop_kind::forward_inference,
                                                    algorithm::convolution_direct, sd, wd, bd, dd,
                                                    {st, st}, {0, 0}, {pad, pad}, {pad, pad}, attr);
      const std::string impl = pd.impl_info_str();
      if (impl.find("ref") != std::string::npos) {
        std::printf("%-14s %s (not timed)\n", v.name, impl.c_str());
        continue;
      }
      memory S(pd.src_desc(), eng), W(pd.weights_desc(), eng), B(bd, eng), D(pd.dst_desc(), eng);
      auto fill = [](memory& m, float value) {
        float* p = static_cast<float*>(m.get_data_handle());
        std::fill(p, p + m.get_desc().get_size() / sizeof(float), value);
      };
      fill(S, 0.5f);
      fill(W, 0.01f);
      fill(B, 0.1f);
      convolution_forward conv(pd);
      std::vector<double> times;
      for (int i = 0; i < 300; ++i) {
        const auto start = std::chrono::steady_clock::now();
        conv.execute(
            s, {{DNNL_ARG_SRC, S}, {DNNL_ARG_WEIGHTS, W}, {DNNL_ARG_BIAS, B}, {DNNL_ARG_DST, D}});
        s.wait();
        times.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
      }
      std::sort(times.begin(), times.end());
      std::printf("%-14s %-26s %.3f ms\n", v.name, impl.c_str(), times[times.size() / 2]);
    } catch (const error&) {
      std::printf("%-14s none\n", v.name);
    }
  }
}
