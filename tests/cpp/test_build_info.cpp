// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Unit test of the core's build_info(), built with GRAPHKILN_BUILD_TESTS=ON and run under
// AddressSanitizer / UBSan by tools/run_sanitized_tests.sh. Exit status 0 when all checks pass.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/build_info.hpp"

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++failures;
}

bool sanitizers_on() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif  // __has_feature(address_sanitizer)
#else
  return false;
#endif  // __SANITIZE_ADDRESS__
}

}  // namespace

int run_executor_checks(void (*check)(bool, const char*));  // test_executor.cpp

int main() {
  const graphkiln::BuildInfo info = graphkiln::build_info();
  check(info.version == GRAPHKILN_TEST_EXPECTED_VERSION, "version is the project's version");
  check(!info.compiler.empty() && info.compiler != "unknown", "compiler is named");
  const std::string& platform = info.gpu_platform;
  check(platform == "none" || platform == "amd" || platform == "nvidia", "gpu_platform is known");
  check(platform != "none" || info.gpu_targets.empty(), "a CPU-only build lists no GPU targets");
  bool no_empty = true;
  for (const std::string& t : info.gpu_targets) no_empty = no_empty && !t.empty();
  check(no_empty, "no GPU target is empty");

  // copies and moves of many results: what ASan would catch if the struct mismanaged memory
  std::vector<graphkiln::BuildInfo> many;
  for (int i = 0; i < 1000; ++i) many.push_back(graphkiln::build_info());
  std::vector<graphkiln::BuildInfo> moved = std::move(many);
  check(moved.size() == 1000 && moved.back().version == info.version, "results copy and move");

  run_executor_checks(check);

  std::printf("address sanitizer: %s\n", sanitizers_on() ? "on" : "off");
  std::printf("%s\n", failures ? "FAILED" : "all build_info checks passed");
  return failures ? 1 : 0;
}
