// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Arenas for the runs of the plans of one program (the cpu target keeps a plan per input
// shape). A run takes a buffer of at least its plan's arena size and gives it back after, so
// that:
// - a new shape's first run writes memory an earlier run already touched instead of fresh
//   pages (page faults were a large part of a new shape's cost);
// - a program with many cached plans holds arenas for the runs in flight, not one per plan.
// Buffers are given out whole to one run at a time (take / give are thread-safe); what a run
// leaves in its arena is garbage to the next one. A pool keeps at most max_free idle buffers,
// dropping the smallest first, and a buffer it allocates has headroom, so that slightly larger
// shapes later reuse it.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>

namespace graphkiln {

class ArenaPool {
 public:
  static constexpr size_t kAlign = 64;

  struct Buffer {
    unsigned char* data = nullptr;
    size_t capacity = 0;
  };

  explicit ArenaPool(size_t max_free = 4) : max_free_(max_free) {}
  ~ArenaPool();
  ArenaPool(const ArenaPool&) = delete;
  ArenaPool& operator=(const ArenaPool&) = delete;

  // The smallest idle buffer of at least `bytes`, else a new one (an idle buffer too small
  // for it is freed: the new one serves its runs as well). bytes == 0: an empty Buffer.
  Buffer take(size_t bytes);
  void give(Buffer buffer);

  size_t idle_bytes() const;       // idle buffers
  size_t allocated_bytes() const;  // every buffer not freed, idle or in a run
  size_t allocations() const;      // buffers allocated so far

 private:
  void release(std::multimap<size_t, unsigned char*>::iterator it);  // mutex_ held

  mutable std::mutex mutex_;
  std::multimap<size_t, unsigned char*> idle_;  // capacity -> buffer
  size_t max_free_;
  size_t idle_bytes_ = 0, allocated_bytes_ = 0, allocations_ = 0;
};

// A buffer of the pool for one scope (a run).
class ArenaLease {
 public:
  ArenaLease(ArenaPool& pool, size_t bytes) : pool_(pool), buffer_(pool.take(bytes)) {}
  ~ArenaLease() { pool_.give(buffer_); }
  ArenaLease(const ArenaLease&) = delete;
  ArenaLease& operator=(const ArenaLease&) = delete;
  unsigned char* data() const { return buffer_.data; }

 private:
  ArenaPool& pool_;
  ArenaPool::Buffer buffer_;
};

}  // namespace graphkiln
