#include "engine/kernels/precision_choice.h"

#include <doctest/doctest.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "engine/kernels/matmul_precision.h"
#include "engine/kernels/units_peak.h"

using namespace vg;

TEST_CASE("--amp auto: bf16 on AMX, on AVX512-BF16 only where its dot products outrun the fmas") {
  // AMX's tiles are picked whatever AVX512-BF16's dot products do (the ratio is not timed there).
  CHECK(auto_matmul_precision(Bf16Hardware::amx, 0) == MatmulPrecision::bf16);
  CHECK(auto_matmul_precision(Bf16Hardware::amx, 0.5) == MatmulPrecision::bf16);
  // AMD's Zen 4 and Zen 5 run the dot products at twice the fmas' rate, an Intel Xeon at half.
  CHECK(auto_matmul_precision(Bf16Hardware::avx512_bf16, 2.0) == MatmulPrecision::bf16);
  CHECK(auto_matmul_precision(Bf16Hardware::avx512_bf16, 0.49) == MatmulPrecision::fp32);
  // Equal rates are not enough: bf16's packing is one more pass over each operand.
  CHECK(auto_matmul_precision(Bf16Hardware::avx512_bf16, 1.0) == MatmulPrecision::fp32);
  CHECK(auto_matmul_precision(Bf16Hardware::avx512_bf16, kBf16DotsFasterBy) ==
        MatmulPrecision::bf16);
  CHECK(auto_matmul_precision(Bf16Hardware::avx512_bf16, kBf16DotsFasterBy * 0.99) ==
        MatmulPrecision::fp32);
  // Without bf16 units there is nothing to weigh.
  CHECK(auto_matmul_precision(Bf16Hardware::none, 2.0) == MatmulPrecision::fp32);
}

TEST_CASE("on this CPU, auto is the rule applied to its own units, timed only where needed") {
  const AutoPrecision& found = auto_precision_on_this_cpu();
  CHECK(found.precision == auto_matmul_precision(bf16_hardware(), found.bf16_dot_over_float_fmas));
  CHECK((found.bf16_dot_over_float_fmas > 0) == (bf16_hardware() == Bf16Hardware::avx512_bf16));
  CHECK(best_matmul_precision() == found.precision);
  CHECK(&auto_precision_on_this_cpu() == &found);  // timed once per process
  // The timing itself: a positive ratio exactly where there are bf16 units.
  CHECK((bf16_dot_over_float_fmas_one_core() > 0) == (bf16_hardware() != Bf16Hardware::none));
}

// Runs f with the calling thread and a thread that only spins sharing one processor, so that
// f's work is cut into time slices at points no run can predict.
template <class F>
void sharing_a_processor_with_a_busy_thread(F&& f) {
  cpu_set_t allowed;
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &allowed)) ++cpu;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    sched_setaffinity(0, sizeof one, &one);
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  f();
  stop = true;
  busy.join();
  sched_setaffinity(0, sizeof allowed, &allowed);
}

TEST_CASE(
    "the units' timed ratio, which --amp auto weighs, does not move when the core is shared") {
  if (bf16_hardware() == Bf16Hardware::none) return;  // nothing is timed
  std::vector<double> ratios;
  sharing_a_processor_with_a_busy_thread([&] {
    for (int i = 0; i < 6; ++i) ratios.push_back(bf16_dot_over_float_fmas_one_core());
  });
  const auto [low, high] = std::minmax_element(ratios.begin(), ratios.end());
  INFO("ratios from " << *low << " to " << *high);
  CHECK(*high / *low < 1.25);
}
