// What gelu_grn_linear holds in memory: in bf16 mode its forward writes GRN's output rounded to
// bf16 (half the floats' bytes), and its backward never stores GELU's values or slope: they are
// made again, a sample at a time, in cache.
#include <doctest/doctest.h>

#include "engine/autograd/autograd.h"
#include "engine/core/rng.h"
#include "engine/core/storage.h"
#include "engine/kernels/matmul_precision.h"
#include "engine/ops/ops.h"
#include "tests/engine/bf16_tiles_helpers.h"

using namespace vg;

namespace {

// h (4, 32, 192) is 96 KiB; W (32, 192) 24 KiB; the output 16 KiB.
struct Inputs {
  Tensor h, gamma, beta, w, dy;
  int64_t h_bytes() const { return h.numel() * 4; }
};

Inputs inputs() {
  Rng rng(96);
  return {randn({4, 32, 192}, rng).set_requires_grad(), randn({192}, rng).set_requires_grad(),
          randn({192}, rng).set_requires_grad(), randn({32, 192}, rng).set_requires_grad(),
          randn({4, 32, 32}, rng)};
}

Tensor forward(const Inputs& in) {
  return gelu_grn_linear(in.h, in.gamma, in.beta, 1e-6, in.w);
}

}  // namespace

TEST_CASE("in bf16 mode gelu_grn_linear's forward writes GRN's output as bf16, half its bytes") {
  const testing::Bf16ModelWhereNeeded model;  // on a CPU without bf16 units
  const Inputs in = inputs();
  auto peak_above_output = [&](MatmulPrecision precision) {
    const MatmulPrecisionGuard mode(precision);
    const int64_t before = memory_stats().bytes_in_use;
    reset_peak_memory();
    Tensor y = forward(in);
    return memory_stats().peak_bytes_in_use - before - y.numel() * 4;
  };
  const int64_t bf16 = peak_above_output(MatmulPrecision::bf16);
  const int64_t fp32 = peak_above_output(MatmulPrecision::fp32);
  INFO("peak bytes besides the output: bf16 ", bf16, ", fp32 ", fp32);
  CHECK(fp32 >= in.h_bytes());
  CHECK(bf16 <= in.h_bytes() / 2 + 1024);
}

TEST_CASE("gelu_grn_linear's backward stores neither GELU's values nor its slope") {
  // Besides dW's 24 KiB: da (dh takes its memory) and GRN's output for dW, as floats or, in
  // bf16 mode, rounded. GELU's values and slope would be two more h-sized tensors.
  const testing::Bf16ModelWhereNeeded model;
  Inputs in = inputs();
  auto second_backward_peak = [&](MatmulPrecision precision) {
    const MatmulPrecisionGuard mode(precision);
    forward(in).backward(in.dy);  // the gradients exist: the second backward adds in place
    Tensor y = forward(in);
    const int64_t before = memory_stats().bytes_in_use;
    reset_peak_memory();
    y.backward(in.dy);
    const int64_t peak = memory_stats().peak_bytes_in_use - before;
    for (Tensor* t : {&in.h, &in.gamma, &in.beta, &in.w}) t->zero_grad();
    return peak;
  };
  const int64_t fp32 = second_backward_peak(MatmulPrecision::fp32);
  const int64_t bf16 = second_backward_peak(MatmulPrecision::bf16);
  const int64_t h_bytes = in.h_bytes(), dw_bytes = in.w.numel() * 4;
  INFO("peak bytes in backward: fp32 ", fp32, ", bf16 ", bf16);
  CHECK(fp32 <= 2 * h_bytes + 2 * dw_bytes);
  CHECK(bf16 <= 3 * h_bytes / 2 + 2 * dw_bytes);
}
