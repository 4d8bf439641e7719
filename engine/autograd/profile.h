// Where a training step's time goes, per op: `vitgrad bench --profile` turns it on.
//
// While an OpProfiler is active on a thread, every recorded op is charged the time since the
// previous op was recorded (its forward, plus the module code between the two), and every
// backward closure the time it ran (plus the gradient accumulation that follows it). Code
// outside ops can charge itself with ProfileSection. Off, the cost is one branch per op.
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace vg {

class OpProfiler {
 public:
  using Clock = std::chrono::steady_clock;
  OpProfiler();
  ~OpProfiler();
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  // Seconds per entry: "matmul", "matmul (backward)", or a section name.
  const std::map<std::string, double>& seconds() const { return seconds_; }
  // Starts the clock of the next forward op (e.g. at the start of a step).
  void mark() { last_ = Clock::now(); }

  void charge(const std::string& name, Clock::time_point since);

 private:
  friend OpProfiler* active_profiler();
  OpProfiler* previous_;
  std::map<std::string, double> seconds_;
  Clock::time_point last_;
  friend void profile_forward(const char* op);
};

// The profiler active on this thread, or null.
OpProfiler* active_profiler();
// Charges the time since the last op (or mark()) to the forward of `op` (called by record()).
void profile_forward(const char* op);

// Charges its lifetime to `name` when a profiler is active (RAII).
class ProfileSection {
 public:
  explicit ProfileSection(const char* name);
  ~ProfileSection();

 private:
  OpProfiler* profiler_;
  const char* name_;
  OpProfiler::Clock::time_point start_;
};

}  // namespace vg
