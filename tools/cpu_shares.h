// How the machine's processors spent their time while something was measured, from Linux's
// /proc/stat. On a virtual machine, "steal" is time the host gave to other guests while this
// one's processors were ready to run: a benchmark taken while the host is busy reads slower
// for reasons outside the program, and `vitgrad bench` says how much.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace vg::tools {

// Clock ticks of all processors since boot, by kind (the "cpu" line of /proc/stat).
struct CpuTicks {
  int64_t busy = 0;   // user, nice, system, irq, softirq
  int64_t idle = 0;   // idle, iowait
  int64_t steal = 0;  // given by the host to others
};

// The "cpu" line of /proc/stat's text; nothing when there is none, or it lacks the steal field.
std::optional<CpuTicks> parse_cpu_ticks(const std::string& proc_stat);
// This machine's ticks now; nothing where /proc/stat cannot be read.
std::optional<CpuTicks> read_cpu_ticks();

// Shares of the time between two readings, in percent of all three kinds; not known when
// either reading is missing or no tick passed between them.
struct CpuShares {
  bool known = false;
  double busy = 0, idle = 0, steal = 0;
};
CpuShares shares_between(const std::optional<CpuTicks>& before,
                         const std::optional<CpuTicks>& after);

}  // namespace vg::tools
