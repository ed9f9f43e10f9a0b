// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Unit checks of the plan executor under the sanitizers: a plan that transposes its input
// through the arena and back (Copy kernels, strided layouts), run many times; an unknown
// kernel and a bad constant index are refused when the plan is built; one executor run from
// four threads at once (a pool of three contexts) gives every thread its own input back.
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/executor.hpp"

namespace {

graphkiln::TensorInfo tensor(std::vector<int64_t> dims, std::vector<int64_t> strides) {
  graphkiln::TensorInfo t;
  t.dtype = graphkiln::DType::f32;
  t.dims = std::move(dims);
  t.strides = std::move(strides);
  return t;
}

graphkiln::StepSpec copy_step(graphkiln::TensorInfo in, graphkiln::TensorRef from,
                              graphkiln::TensorInfo out, graphkiln::TensorRef to) {
  graphkiln::StepSpec s;
  s.spec.kernel = "Copy";
  s.spec.name = "copy";
  s.spec.inputs = {std::move(in)};
  s.spec.present = {true};
  s.spec.outputs = {std::move(out)};
  s.inputs = {from};
  s.outputs = {to};
  return s;
}

}  // namespace

int run_executor_checks(void (*check)(bool, const char*)) {
  using graphkiln::Storage;
  using graphkiln::TensorRef;
  const int rows = 37, cols = 53;
  std::vector<graphkiln::StepSpec> steps;
  // input (rows, cols) row-major -> arena, same logical tensor stored column-major
  steps.push_back(copy_step(tensor({rows, cols}, {cols, 1}), TensorRef{Storage::input, 0, 0},
                            tensor({rows, cols}, {1, rows}), TensorRef{Storage::arena, 0, 64}));
  // arena -> output, row-major again
  steps.push_back(copy_step(tensor({rows, cols}, {1, rows}), TensorRef{Storage::arena, 0, 64},
                            tensor({rows, cols}, {cols, 1}), TensorRef{Storage::output, 0, 0}));
  graphkiln::Executor executor(std::move(steps), {}, 64 + rows * cols * 4, 2);
  std::vector<float> in(rows * cols), out(rows * cols, -1.0f);
  for (int i = 0; i < rows * cols; ++i) in[i] = static_cast<float>(i) * 0.5f - 7.0f;
  bool same = true;
  for (int run = 0; run < 50; ++run) {
    executor.run({in.data()}, {out.data()});
    same = same && out == in;
  }
  check(same, "a transpose through the arena and back returns the input, 50 runs");
  check(executor.num_steps() == 2, "the plan has its two steps");

  {
    std::vector<graphkiln::StepSpec> twice;
    twice.push_back(copy_step(tensor({rows, cols}, {cols, 1}), TensorRef{Storage::input, 0, 0},
                              tensor({rows, cols}, {1, rows}), TensorRef{Storage::arena, 0, 64}));
    twice.push_back(copy_step(tensor({rows, cols}, {1, rows}), TensorRef{Storage::arena, 0, 64},
                              tensor({rows, cols}, {cols, 1}), TensorRef{Storage::output, 0, 0}));
    graphkiln::Executor pooled(std::move(twice), {}, 64 + rows * cols * 4, 1, {}, 3);
    std::vector<int> good(4, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        std::vector<float> mine(rows * cols), back(rows * cols);
        for (int run = 0; run < 200; ++run) {
          for (int i = 0; i < rows * cols; ++i) mine[i] = static_cast<float>(t * 100000 + run * 7 + i);
          pooled.run({mine.data()}, {back.data()});
          good[t] += back == mine;
        }
      });
    for (auto& th : threads) th.join();
    check(good == std::vector<int>(4, 200), "four threads at once each get their own input back");
    check(pooled.contexts_created() >= 1 && pooled.contexts_created() <= 3,
          "the pool holds at most max_contexts contexts");
  }

  bool refused = false;
  try {
    std::vector<graphkiln::StepSpec> bad;
    bad.push_back(copy_step(tensor({2}, {1}), TensorRef{Storage::input, 0, 0}, tensor({2}, {1}),
                            TensorRef{Storage::output, 0, 0}));
    bad.back().spec.kernel = "NoSuchKernel";
    graphkiln::Executor e(std::move(bad), {}, 0, 1);
  } catch (const std::invalid_argument&) {
    refused = true;
  }
  check(refused, "an unknown kernel is refused when the plan is built");

  refused = false;
  try {
    std::vector<graphkiln::StepSpec> bad;
    bad.push_back(copy_step(tensor({2}, {1}), TensorRef{Storage::constant, 5, 0}, tensor({2}, {1}),
                            TensorRef{Storage::output, 0, 0}));
    graphkiln::Executor e(std::move(bad), {}, 0, 1);
  } catch (const std::invalid_argument&) {
    refused = true;
  }
  check(refused, "a constant index out of range is refused");

  // storage sizes given (as the Python binding always does): a tensor reaching past the end
  // of its storage, or naming an input that does not exist, is refused before any kernel runs
  const auto refused_with_sizes = [&](TensorRef from, TensorRef to, std::vector<int64_t> dims) {
    graphkiln::StorageBytes sizes;
    sizes.checked = true;
    sizes.inputs = {8};
    sizes.outputs = {8};
    std::vector<graphkiln::StepSpec> bad;
    bad.push_back(copy_step(tensor(dims, {1}), from, tensor(dims, {1}), to));
    try {
      graphkiln::Executor e(std::move(bad), {}, 16, 1, sizes);
    } catch (const std::invalid_argument&) {
      return true;
    }
    return false;
  };
  check(!refused_with_sizes({Storage::input, 0, 0}, {Storage::output, 0, 0}, {2}),
        "two floats fit their 8-byte storages");
  check(refused_with_sizes({Storage::input, 0, 4}, {Storage::output, 0, 0}, {2}),
        "an input view past the end of its storage is refused");
  check(refused_with_sizes({Storage::input, 0, 0}, {Storage::arena, 0, 12}, {2}),
        "an arena view past the end of the arena is refused");
  check(refused_with_sizes({Storage::input, 3, 0}, {Storage::output, 0, 0}, {2}),
        "an input index out of range is refused");
  check(refused_with_sizes({Storage::input, 0, 0}, {Storage::output, 0, 0}, {3}),
        "a tensor larger than its storage is refused");
  check(!refused_with_sizes({Storage::input, 0, 100}, {Storage::output, 0, 100}, {0}),
        "an empty tensor touches nothing, wherever it points");
  return 0;
}
