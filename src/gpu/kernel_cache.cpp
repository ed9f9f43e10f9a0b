// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The on-disk cache of runtime-compiled GPU code: see kernel_cache.hpp.
#include "gpu/kernel_cache.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace graphkiln {
namespace gpu {

namespace {

constexpr char kMagic[] = "graphkiln kernel cache 1\n";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// mkdir -p; true when the folder exists afterwards
bool make_dirs(const std::string& dir) {
  if (dir.empty()) return false;
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  struct stat st;
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

uint64_t fnv1a(const std::string& text, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::atomic<bool> warned{false};

void warn_once(const std::string& message) {
  if (!warned.exchange(true))
    std::fprintf(stderr, "graphkiln: %s; runtime-compiled GPU kernels are not cached\n",
                 message.c_str());
}

}  // namespace

std::string kernel_cache_dir() {
  if (const char* v = std::getenv("GRAPHKILN_KERNEL_CACHE")) {
    const std::string dir(v);
    return dir == "off" ? std::string() : dir;
  }
  std::string base = env("XDG_CACHE_HOME");
  if (base.empty()) {
    const std::string home = env("HOME");
    if (home.empty()) return std::string();
    base = home + "/.cache";
  }
  return base + "/graphkiln/kernels";
}

std::string hash_hex(const std::string& text) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx",
                static_cast<unsigned long long>(fnv1a(text, 1469598103934665603ull)),
                static_cast<unsigned long long>(fnv1a(text, 0x9e3779b97f4a7c15ull)));
  return buf;
}

KernelCache::KernelCache(std::string dir) : dir_(std::move(dir)) {}

std::string KernelCache::path_of(const std::string& key) const {
  return dir_ + "/" + hash_hex(key) + ".bin";
}

bool KernelCache::load(const std::string& key, std::string* binary) const {
  if (dir_.empty()) return false;
  std::ifstream file(path_of(key), std::ios::binary);
  if (!file) return false;
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string data = buffer.str();
  // magic, key size, key, binary size, binary
  const size_t magic = sizeof(kMagic) - 1;
  if (data.size() < magic + 16 || data.compare(0, magic, kMagic) != 0) return false;
  uint64_t key_size = 0, size = 0;
  std::memcpy(&key_size, data.data() + magic, 8);
  if (key_size != key.size() || data.size() < magic + 16 + key_size) return false;
  if (data.compare(magic + 8, key_size, key) != 0) return false;
  std::memcpy(&size, data.data() + magic + 8 + key_size, 8);
  const size_t start = magic + 16 + key_size;
  if (size == 0 || data.size() != start + size) return false;
  *binary = data.substr(start);
  return true;
}

bool KernelCache::store(const std::string& key, const std::string& binary) const {
  if (dir_.empty()) return false;
  if (!make_dirs(dir_)) {
    warn_once("cannot create the kernel cache folder " + dir_ + " (" + std::strerror(errno) + ")");
    return false;
  }
  static std::atomic<unsigned> counter{0};
  const std::string path = path_of(key);
  const std::string temp =
      path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter.fetch_add(1));
  {
    std::ofstream file(temp, std::ios::binary | std::ios::trunc);
    if (!file) {
      warn_once("cannot write to the kernel cache folder " + dir_ + " (" + std::strerror(errno) +
                ")");
      return false;
    }
    const uint64_t key_size = key.size(), size = binary.size();
    file.write(kMagic, sizeof(kMagic) - 1);
    file.write(reinterpret_cast<const char*>(&key_size), 8);
    file.write(key.data(), static_cast<std::streamsize>(key.size()));
    file.write(reinterpret_cast<const char*>(&size), 8);
    file.write(binary.data(), static_cast<std::streamsize>(binary.size()));
    file.close();
    if (!file) {
      std::remove(temp.c_str());
      warn_once("writing " + temp + " failed");
      return false;
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    warn_once("cannot rename into the kernel cache folder " + dir_);
    return false;
  }
  return true;
}

}  // namespace gpu
}  // namespace graphkiln
