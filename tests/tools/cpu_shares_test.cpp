// The processors' shares that `vitgrad bench` reports, read from /proc/stat's "cpu" line:
// worked by hand on fixed text, and on this machine's own file.
#include "tools/cpu_shares.h"

#include <doctest/doctest.h>

#include <chrono>

using namespace vg::tools;

TEST_CASE("the cpu line of /proc/stat: busy, idle and steal ticks") {
  // user nice system idle iowait irq softirq steal guest guest_nice, then a line per CPU
  const auto ticks = parse_cpu_ticks(
      "cpu  499 1 53 154 6 3 2 93 40 0\ncpu0 241 0 33 73 0 0 1 47 0 0\nintr 12345\n");
  REQUIRE(ticks.has_value());
  CHECK(ticks->busy == 499 + 1 + 53 + 3 + 2);  // guest time is counted inside user already
  CHECK(ticks->idle == 154 + 6);
  CHECK(ticks->steal == 93);
}

TEST_CASE("a /proc/stat without a whole cpu line gives no ticks") {
  CHECK_FALSE(parse_cpu_ticks("").has_value());
  CHECK_FALSE(parse_cpu_ticks("cpu0 1 2 3 4 5 6 7 8\nintr 5\n").has_value());  // per-CPU only
  CHECK_FALSE(parse_cpu_ticks("cpu  1 2 3 4 5 6 7\n").has_value());            // no steal field
  CHECK_FALSE(parse_cpu_ticks("cpu  1 2 3 x 5 6 7 8\n").has_value());
  CHECK_FALSE(parse_cpu_ticks("cpu  1 2 3 -4 5 6 7 8\n").has_value());
}

TEST_CASE("shares between two readings add up to 100 percent") {
  const CpuTicks before{1000, 500, 10}, after{1620, 690, 200};  // 620 busy, 190 idle, 190 steal
  const CpuShares shares = shares_between(before, after);
  REQUIRE(shares.known);
  CHECK(shares.busy == doctest::Approx(62.0));
  CHECK(shares.idle == doctest::Approx(19.0));
  CHECK(shares.steal == doctest::Approx(19.0));
  CHECK_FALSE(shares_between(before, before).known);       // no time passed
  CHECK_FALSE(shares_between(after, before).known);        // counters do not run backwards
  CHECK_FALSE(shares_between(std::nullopt, after).known);  // a reading is missing
}

TEST_CASE("this machine's /proc/stat moves forward") {
  const auto first = read_cpu_ticks();
  if (!first) return;  // not Linux: bench leaves the shares out
  // Busy for 0.2 s, twenty clock ticks of this processor.
  volatile double sink = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (std::chrono::steady_clock::now() < until) sink = sink + 1;
  const CpuShares shares = shares_between(first, read_cpu_ticks());
  REQUIRE(shares.known);
  CHECK(shares.busy > 0);  // this test itself was running
  CHECK(shares.busy + shares.idle + shares.steal == doctest::Approx(100.0));
}
