// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include "core/attrs.hpp"

#include <stdexcept>

namespace graphkiln {

const AttrValue& Attrs::find(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw std::invalid_argument("kernel attribute '" + name + "' missing");
  return it->second;
}

int64_t Attrs::get_int(const std::string& name) const {
  const AttrValue& v = find(name);
  if (auto p = std::get_if<int64_t>(&v)) return *p;
  throw std::invalid_argument("kernel attribute '" + name + "' is not an int");
}
int64_t Attrs::get_int(const std::string& name, int64_t fallback) const {
  return has(name) ? get_int(name) : fallback;
}

double Attrs::get_float(const std::string& name) const {
  const AttrValue& v = find(name);
  if (auto p = std::get_if<double>(&v)) return *p;
  if (auto p = std::get_if<int64_t>(&v)) return static_cast<double>(*p);
  throw std::invalid_argument("kernel attribute '" + name + "' is not a float");
}
double Attrs::get_float(const std::string& name, double fallback) const {
  return has(name) ? get_float(name) : fallback;
}

std::string Attrs::get_str(const std::string& name) const {
  const AttrValue& v = find(name);
  if (auto p = std::get_if<std::string>(&v)) return *p;
  throw std::invalid_argument("kernel attribute '" + name + "' is not a string");
}
std::string Attrs::get_str(const std::string& name, const std::string& fallback) const {
  return has(name) ? get_str(name) : fallback;
}

std::vector<int64_t> Attrs::get_ints(const std::string& name) const {
  const AttrValue& v = find(name);
  if (auto p = std::get_if<std::vector<int64_t>>(&v)) return *p;
  if (auto p = std::get_if<std::vector<double>>(&v); p && p->empty()) return {};
  if (auto p = std::get_if<std::vector<std::string>>(&v); p && p->empty()) return {};
  throw std::invalid_argument("kernel attribute '" + name + "' is not a list of ints");
}
std::vector<int64_t> Attrs::get_ints(const std::string& name, std::vector<int64_t> fallback) const {
  return has(name) ? get_ints(name) : fallback;
}

std::vector<double> Attrs::get_floats(const std::string& name) const {
  const AttrValue& v = find(name);
  if (auto p = std::get_if<std::vector<double>>(&v)) return *p;
  if (auto p = std::get_if<std::vector<int64_t>>(&v)) return {p->begin(), p->end()};
  throw std::invalid_argument("kernel attribute '" + name + "' is not a list of floats");
}

std::vector<std::string> Attrs::get_strs(const std::string& name) const {
  const AttrValue& v = find(name);
  if (auto p = std::get_if<std::vector<std::string>>(&v)) return *p;
  if (auto p = std::get_if<std::vector<int64_t>>(&v); p && p->empty()) return {};
  throw std::invalid_argument("kernel attribute '" + name + "' is not a list of strings");
}

}  // namespace graphkiln
