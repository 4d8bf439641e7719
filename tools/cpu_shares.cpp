#include "tools/cpu_shares.h"

#include <fstream>
#include <iterator>
#include <sstream>

namespace vg::tools {

std::optional<CpuTicks> parse_cpu_ticks(const std::string& proc_stat) {
  std::istringstream lines(proc_stat);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string name;
    if (!(fields >> name) || name != "cpu") continue;
    // user nice system idle iowait irq softirq steal (guest time is inside user already)
    int64_t t[8];
    for (int64_t& value : t)
      if (!(fields >> value) || value < 0) return std::nullopt;
    return CpuTicks{t[0] + t[1] + t[2] + t[5] + t[6], t[3] + t[4], t[7]};
  }
  return std::nullopt;
}

std::optional<CpuTicks> read_cpu_ticks() {
  std::ifstream file("/proc/stat");
  if (!file) return std::nullopt;
  return parse_cpu_ticks(std::string(std::istreambuf_iterator<char>(file), {}));
}

CpuShares shares_between(const std::optional<CpuTicks>& before,
                         const std::optional<CpuTicks>& after) {
  if (!before || !after) return {};
  const double busy = double(after->busy - before->busy), idle = double(after->idle - before->idle),
               steal = double(after->steal - before->steal), total = busy + idle + steal;
  if (total <= 0 || busy < 0 || idle < 0 || steal < 0) return {};
  return {true, 100 * busy / total, 100 * idle / total, 100 * steal / total};
}

}  // namespace vg::tools
