// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The process-wide gate between graph captures and the rest of graphkiln's GPU work
// (executor.hpp says why): many holders share it, a capture holds it alone. A capture
// waiting keeps new sharers out (else runs arriving back to back from several threads would
// keep it waiting forever); captures are few (one per execution context), so sharers never
// starve. Not reentrant: a thread takes it at most once at a time (executor.hip takes it only
// at GpuExecutor's public entry points and around making a context, never inside them).
// Plain C++, no GPU headers.
#pragma once

#include <condition_variable>
#include <mutex>

namespace graphkiln {
namespace gpu {

class DeviceGate {
 public:
  // The one gate of the process. Never destroyed: executors freed at exit may still use it.
  static DeviceGate& instance() {
    static DeviceGate* gate = new DeviceGate;
    return *gate;
  }

  void share() {
    std::unique_lock<std::mutex> lock(m_);
    changed_.wait(lock, [&] { return !alone_ && waiting_alone_ == 0; });
    ++sharing_;
  }
  void unshare() {
    std::lock_guard<std::mutex> lock(m_);
    if (--sharing_ == 0) changed_.notify_all();
  }
  void hold_alone() {
    std::unique_lock<std::mutex> lock(m_);
    ++waiting_alone_;
    changed_.wait(lock, [&] { return !alone_ && sharing_ == 0; });
    --waiting_alone_;
    alone_ = true;
  }
  void release_alone() {
    std::lock_guard<std::mutex> lock(m_);
    alone_ = false;
    changed_.notify_all();
  }

 private:
  DeviceGate() = default;
  std::mutex m_;
  std::condition_variable changed_;
  int sharing_ = 0, waiting_alone_ = 0;
  bool alone_ = false;
};

// Holds the gate for a scope: shared, or alone (a capturing run).
class GateHold {
 public:
  explicit GateHold(bool alone) : alone_(alone) {
    if (alone_) DeviceGate::instance().hold_alone();
    else DeviceGate::instance().share();
  }
  ~GateHold() {
    if (alone_) DeviceGate::instance().release_alone();
    else DeviceGate::instance().unshare();
  }
  GateHold(const GateHold&) = delete;
  GateHold& operator=(const GateHold&) = delete;

 private:
  bool alone_;
};

}  // namespace gpu
}  // namespace graphkiln
