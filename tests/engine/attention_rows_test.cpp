#include "engine/kernels/attention_rows.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/core/rng.h"
#include "engine/kernels/row_sum.h"
#include "engine/kernels/vec_math.h"
#include "tests/engine/bits_helpers.h"

using namespace vg;
using vg::testing::same_bits;

namespace {

// The generic loops of engine/ops/attention.cpp, which the AVX-512 rows must match bit for bit.
void softmax_reference(float* row, int64_t n) {
  const float m = vec::row_max(row, n);
  for (int64_t j = 0; j < n; ++j) row[j] = vec::exp_of(row[j] - m);
  const float inv = float(1.0 / vec::row_sum(n, [&](int64_t j) { return row[j]; }));
  for (int64_t j = 0; j < n; ++j) row[j] *= inv;
}

void softmax_grad_reference(const float* p, float* ds, int64_t n) {
  const double dot = vec::row_sum(n, [&](int64_t j) { return double(ds[j]) * p[j]; });
  for (int64_t j = 0; j < n; ++j) ds[j] = p[j] * (ds[j] - float(dot));
}

std::vector<float> random_rows(int64_t count, float scale, Rng& rng) {
  std::vector<float> v(count);
  for (float& e : v) e = scale * float(rng.normal());
  return v;
}

}  // namespace

// The rows cover the softmax's blocks of eight and its pairs and single rows after them (1, 3,
// 4, 9, 15, 50), and the gradient's blocks of four and every remainder; n covers a single
// entry, part of one vector, the eight-lane sum's edges (8, 9) and vectors with tails (17, 50,
// 65, 200).
TEST_CASE("attention's AVX-512 softmax rows give the generic loops' bits") {
  if constexpr (detail::kAttentionRowsAvx512) {  // else the generic loops run alone
    Rng rng(31);
    for (int64_t n : {1, 5, 8, 9, 16, 17, 50, 65, 200})
      for (int64_t rows : {1, 3, 4, 9, 15, 50})
        for (float scale : {1.0f, 30.0f}) {
          CAPTURE(n);
          CAPTURE(rows);
          CAPTURE(scale);
          std::vector<float> s = random_rows(rows * n, scale, rng), want = s;
          for (int64_t i = 0; i < rows; ++i) softmax_reference(want.data() + i * n, n);
          detail::softmax_rows_avx512(s.data(), rows, n);
          CHECK(same_bits(s, want));

          std::vector<float> p = want, ds = random_rows(rows * n, scale, rng), want_ds = ds;
          for (int64_t i = 0; i < rows; ++i)
            softmax_grad_reference(p.data() + i * n, want_ds.data() + i * n, n);
          detail::softmax_grad_rows_avx512(p.data(), ds.data(), rows, n);
          CHECK(same_bits(ds, want_ds));
        }
  }
}

TEST_CASE("attention's AVX-512 softmax: a masked score vanishes, a NaN spreads over its row") {
  if constexpr (detail::kAttentionRowsAvx512) {
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    // Row 0: -inf (a masked key) among finite scores; row 1: a NaN; rows 2 and 3: plain.
    std::vector<float> s = {0.5f, -inf, 1.5f, -1.0f, 2.0f, nan,  0.0f, 1.0f,
                            1.0f, 1.0f, 1.0f, 1.0f,  3.0f, 0.0f, 0.0f, 0.0f};
    std::vector<float> want = s;
    for (int i = 0; i < 4; ++i) softmax_reference(want.data() + 4 * i, 4);
    detail::softmax_rows_avx512(s.data(), 4, 4);
    CHECK(same_bits(s, want));
    CHECK(s[1] < 1e-30f);  // vec::exp clamps its argument at -87.3: exp(-inf) is about 1e-38
    for (int j = 4; j < 8; ++j) CHECK(std::isnan(s[j]));
    for (int j = 8; j < 12; ++j) CHECK(s[j] == 0.25f);
    CHECK(s[0] + s[2] + s[3] == doctest::Approx(1.0).epsilon(1e-6));
  }
}
