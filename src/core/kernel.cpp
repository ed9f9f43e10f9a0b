// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include "core/kernel.hpp"

#include <map>
#include <stdexcept>

namespace graphkiln {

namespace {
std::map<std::string, KernelFactory>& registry() {
  static std::map<std::string, KernelFactory> table;
  return table;
}
}  // namespace

bool register_kernel(const std::string& name, KernelFactory factory) {
  registry()[name] = std::move(factory);
  return true;
}

std::unique_ptr<Kernel> make_kernel(const KernelSpec& spec) {
  auto it = registry().find(spec.kernel);
  if (it == registry().end())
    throw std::invalid_argument("the cpu target has no kernel '" + spec.kernel + "' (node '" +
                                spec.name + "')");
  try {
    return it->second(spec);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    throw std::invalid_argument(spec.kernel + " '" + spec.name + "': " + e.what());
  }
}

std::vector<std::string> registered_kernels() {
  std::vector<std::string> names;
  for (const auto& item : registry()) names.push_back(item.first);
  return names;
}

void spec_error(const KernelSpec& spec, const std::string& message) {
  throw std::invalid_argument(spec.kernel + " '" + spec.name + "': " + message);
}

}  // namespace graphkiln

namespace graphkiln {

bool is_control_kernel(const std::string& name) {
  return name == "Branch" || name == "Jump" || name == "LoopTest" || name == "LoopNext";
}

}  // namespace graphkiln
