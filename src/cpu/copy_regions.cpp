// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "CopyRegions": strided copies between inputs and outputs, described by the Python lowering
// (lower_data.py). Transpose, Slice, Concat, Split, Expand, Tile, DepthToSpace and
// SpaceToDepth all lower to it: each region is an N-d view of one input (element offset and
// strides, which may be negative or 0) copied into a view of one output.
//
// attrs: ranks[r], io[2r] (input index, output index), offsets[2r] (source, destination
// element offsets), dims / src_strides / dst_strides (the regions' lists, concatenated).
#include <algorithm>
#include <cstring>
#include <memory>

#include "core/kernel.hpp"
#include "cpu/strided_copy.hpp"

namespace graphkiln {
namespace {

struct Region {
  int input, output;
  int64_t src_offset, dst_offset;  // bytes
  StridedCopy copy;
};

// Regions that each copy rows of contiguous elements into the same rows of one output (a
// Concat along the innermost dim, as a channels-last Concat of feature maps is): one pass
// over the output's rows, each row filled from every region in turn, instead of one strided
// pass over the output per region. Rows are split statically over the threads, as the steps
// that wrote the inputs split their pixels.
struct InterleavedRows {
  struct Piece {
    int input;
    int64_t src_offset, src_row, dst_offset, bytes;  // bytes
  };
  int output = 0;
  int64_t rows = 0, dst_row = 0;  // bytes between the output's rows
  std::vector<Piece> pieces;

  // null unless every region is such a copy into the same output with the same row count
  // and row stride (and the regions are not one)
  static std::unique_ptr<InterleavedRows> plan(const std::vector<Region>& regions) {
    if (regions.size() < 2) return nullptr;
    auto plan = std::make_unique<InterleavedRows>();
    for (const Region& r : regions) {
      const StridedCopy& c = r.copy;
      const auto& d = c.dims();
      if (c.empty() || c.tiled() || d.size() != 2 || c.src_strides()[1] != 1 ||
          c.dst_strides()[1] != 1 || c.src_strides()[0] < 0)
        return nullptr;
      const int64_t es = static_cast<int64_t>(c.elem_size());
      if (plan->pieces.empty()) {
        plan->output = r.output;
        plan->rows = d[0];
        plan->dst_row = c.dst_strides()[0] * es;
      } else if (r.output != plan->output || d[0] != plan->rows ||
                 c.dst_strides()[0] * es != plan->dst_row) {
        return nullptr;
      }
      plan->pieces.push_back(
          {r.input, r.src_offset, c.src_strides()[0] * es, r.dst_offset, d[1] * es});
    }
    return plan;
  }

  void run(const void* const* inputs, void* const* outputs) const {
    auto* out = static_cast<unsigned char*>(outputs[output]);
    int64_t row_bytes = 0;
    for (const Piece& p : pieces) row_bytes += p.bytes;
    const bool parallel = rows * row_bytes > StridedCopy::kParallelElems * 4;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t i = 0; i < rows; ++i) {
      unsigned char* dst = out + i * dst_row;
      for (const Piece& p : pieces)
        std::memcpy(
            dst + p.dst_offset,
            static_cast<const unsigned char*>(inputs[p.input]) + p.src_offset + i * p.src_row,
            static_cast<size_t>(p.bytes));
    }
  }
};

class CopyRegionsKernel : public Kernel {
 public:
  CopyRegionsKernel(std::vector<Region> regions, bool spread)
      : regions_(std::move(regions)), spread_(spread), rows_(InterleavedRows::plan(regions_)) {}
  void run(const void* const* inputs, void* const* outputs) override {
    const int64_t n = static_cast<int64_t>(regions_.size());
    if (rows_) {
      rows_->run(inputs, outputs);
      return;
    }
    if (spread_) {
      // many small regions (a Concat of many inputs): one region per task; each copy is
      // below its own parallel threshold, so it runs on the calling thread
#pragma omp parallel for schedule(dynamic, 1)
      for (int64_t i = 0; i < n; ++i) one(regions_[i], inputs, outputs);
      return;
    }
    for (const Region& r : regions_) one(r, inputs, outputs);
  }

 private:
  static void one(const Region& r, const void* const* inputs, void* const* outputs) {
    r.copy.run(static_cast<const unsigned char*>(inputs[r.input]) + r.src_offset,
               static_cast<unsigned char*>(outputs[r.output]) + r.dst_offset);
  }
  std::vector<Region> regions_;
  bool spread_;
  std::unique_ptr<InterleavedRows> rows_;
};

std::unique_ptr<Kernel> make_copy_regions(const KernelSpec& spec) {
  const auto ranks = spec.attrs.get_ints("ranks");
  const auto io = spec.attrs.get_ints("io");
  const auto offsets = spec.attrs.get_ints("offsets");
  const auto dims = spec.attrs.get_ints("dims");
  const auto src_strides = spec.attrs.get_ints("src_strides");
  const auto dst_strides = spec.attrs.get_ints("dst_strides");
  const size_t n = ranks.size();
  if (io.size() != 2 * n || offsets.size() != 2 * n) spec_error(spec, "bad region lists");
  int64_t total = 0;
  for (int64_t r : ranks) total += r;
  if (dims.size() != static_cast<size_t>(total) || src_strides.size() != dims.size() ||
      dst_strides.size() != dims.size())
    spec_error(spec, "bad region dims / strides");
  std::vector<Region> regions;
  size_t at = 0;
  int64_t total_elems = 0;
  bool small = true;
  for (size_t r = 0; r < n; ++r) {
    const int in = static_cast<int>(io[2 * r]), out = static_cast<int>(io[2 * r + 1]);
    if (in < 0 || in >= static_cast<int>(spec.inputs.size()) || !spec.has_input(in) || out < 0 ||
        out >= static_cast<int>(spec.outputs.size()))
      spec_error(spec, "region names a missing input or output");
    const TensorInfo& ti = spec.inputs[in];
    const TensorInfo& to = spec.outputs[out];
    if (dtype_size(ti.dtype) != dtype_size(to.dtype))
      spec_error(spec, "input and output element sizes differ");
    std::vector<int64_t> d(dims.begin() + at, dims.begin() + at + ranks[r]);
    std::vector<int64_t> ss(src_strides.begin() + at, src_strides.begin() + at + ranks[r]);
    std::vector<int64_t> ds(dst_strides.begin() + at, dst_strides.begin() + at + ranks[r]);
    at += ranks[r];
    int64_t lo, hi, numel = 1;
    for (int64_t x : d) numel *= x;
    if (numel == 0) continue;
    StridedCopy::extent(d, ss, &lo, &hi);
    if (offsets[2 * r] + lo < 0 || offsets[2 * r] + hi >= ti.numel())
      spec_error(spec, "a region reads outside its input");
    StridedCopy::extent(d, ds, &lo, &hi);
    if (offsets[2 * r + 1] + lo < 0 || offsets[2 * r + 1] + hi >= to.numel())
      spec_error(spec, "a region writes outside its output");
    const int64_t es = static_cast<int64_t>(dtype_size(ti.dtype));
    total_elems += numel;
    small = small && numel <= StridedCopy::kParallelElems;
    regions.push_back(Region{in, out, offsets[2 * r] * es, offsets[2 * r + 1] * es,
                             StridedCopy(dtype_size(ti.dtype), d, ss, ds)});
  }
  const bool spread = regions.size() > 1 && small && total_elems > StridedCopy::kParallelElems;
  return std::make_unique<CopyRegionsKernel>(std::move(regions), spread);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("CopyRegions", make_copy_regions);

}  // namespace graphkiln
