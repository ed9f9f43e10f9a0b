// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The on-disk cache of runtime-compiled GPU code (plain C++, no GPU headers: tests build it
// with the host compiler). One file per key, named after a hash of the key; the file repeats
// the whole key, so a hash collision or a truncated / foreign file reads as a miss. Writes
// go to a temporary file renamed into place, so readers never see half a file. A folder
// that cannot be written leaves the cache off, with one warning on stderr.
#pragma once

#include <string>

namespace graphkiln {
namespace gpu {

// GRAPHKILN_KERNEL_CACHE when set ("" or "off": no cache), else
// $XDG_CACHE_HOME/graphkiln/kernels (XDG_CACHE_HOME defaulting to ~/.cache).
std::string kernel_cache_dir();

// 32 hex digits of a hash of `text` (not cryptographic; used for file names).
std::string hash_hex(const std::string& text);

class KernelCache {
 public:
  explicit KernelCache(std::string dir);  // "" disables the cache
  // The binary stored under `key`; false on a miss, a foreign or a damaged file.
  bool load(const std::string& key, std::string* binary) const;
  // Stores atomically; false (after one warning per process) when the folder is not writable.
  bool store(const std::string& key, const std::string& binary) const;
  std::string path_of(const std::string& key) const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

}  // namespace gpu
}  // namespace graphkiln
