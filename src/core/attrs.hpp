// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// A kernel's constant arguments, as the Python lowering wrote them (mostly the IR node's
// attributes under their IR names).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace graphkiln {

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>>;

class Attrs {
 public:
  Attrs() = default;
  explicit Attrs(std::map<std::string, AttrValue> values) : values_(std::move(values)) {}

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  int64_t get_int(const std::string& name) const;
  int64_t get_int(const std::string& name, int64_t fallback) const;
  double get_float(const std::string& name) const;
  double get_float(const std::string& name, double fallback) const;
  std::string get_str(const std::string& name) const;
  std::string get_str(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> get_ints(const std::string& name) const;
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> fallback) const;
  std::vector<double> get_floats(const std::string& name) const;
  std::vector<std::string> get_strs(const std::string& name) const;

 private:
  const AttrValue& find(const std::string& name) const;
  std::map<std::string, AttrValue> values_;
};

}  // namespace graphkiln
