// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include "core/arena_pool.hpp"

#include <cstdlib>
#include <new>

namespace graphkiln {

namespace {

constexpr size_t kGranule = 64 * 1024;

// what to allocate for a request: an eighth more, in whole granules
size_t capacity_for(size_t bytes) {
  const size_t wanted = bytes + bytes / 8;
  return (wanted + kGranule - 1) / kGranule * kGranule;
}

}  // namespace

ArenaPool::~ArenaPool() {
  for (auto& [capacity, data] : idle_) std::free(data);
}

void ArenaPool::release(std::multimap<size_t, unsigned char*>::iterator it) {
  std::free(it->second);
  idle_bytes_ -= it->first;
  allocated_bytes_ -= it->first;
  idle_.erase(it);
}

ArenaPool::Buffer ArenaPool::take(size_t bytes) {
  if (bytes == 0) return {};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = idle_.lower_bound(bytes);
    if (it != idle_.end()) {
      Buffer buffer{it->second, it->first};
      idle_bytes_ -= it->first;
      idle_.erase(it);
      return buffer;
    }
    if (!idle_.empty()) release(std::prev(idle_.end()));  // the largest, still too small
  }
  const size_t capacity = capacity_for(bytes);
  auto* data = static_cast<unsigned char*>(std::aligned_alloc(kAlign, capacity));
  if (!data) throw std::bad_alloc();
  std::lock_guard<std::mutex> lock(mutex_);
  allocated_bytes_ += capacity;
  ++allocations_;
  return {data, capacity};
}

void ArenaPool::give(Buffer buffer) {
  if (!buffer.data) return;
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.emplace(buffer.capacity, buffer.data);
  idle_bytes_ += buffer.capacity;
  while (idle_.size() > max_free_) release(idle_.begin());
}

size_t ArenaPool::idle_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return idle_bytes_;
}

size_t ArenaPool::allocated_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocated_bytes_;
}

size_t ArenaPool::allocations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocations_;
}

}  // namespace graphkiln
