#include "engine/kernels/layer_norm_rows.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/core/rng.h"
#include "engine/kernels/layer_norm_rows_avx2.h"
#include "tests/engine/bits_helpers.h"

using namespace vg;

namespace {

std::vector<double> normal_values(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<double> x(n);
  for (double& v : x) v = rng.normal();
  return x;
}

// The largest |a - b| over two arrays, for the failure message.
double worst(const std::vector<double>& a, const std::vector<double>& b) {
  double w = 0;
  for (size_t i = 0; i < a.size(); ++i) w = std::max(w, std::abs(a[i] - b[i]));
  return w;
}

}  // namespace

// 70 rows cut into 32 blocks of 2 or 3; C = 37 leaves a tail after the eight sum lanes.
TEST_CASE("layer_norm_rows and its backward are within 1e-12 of the plain loops in float64") {
  const int64_t rows = 70, C = 37;
  const std::vector<double> x = normal_values(rows * C, 1), w = normal_values(C, 2),
                            b = normal_values(C, 3), dy = normal_values(rows * C, 4);
  for (bool affine : {true, false}) {
    INFO("with weight and bias: ", affine);
    const double* wp = affine ? w.data() : nullptr;
    std::vector<double> y(rows * C), y_ref(rows * C), stats(2 * rows), stats_ref(2 * rows);
    kernels::layer_norm_rows(x.data(), wp, affine ? b.data() : nullptr, 1e-5, y.data(),
                             stats.data(), rows, C);
    kernels::layer_norm_rows_reference(x.data(), wp, affine ? b.data() : nullptr, 1e-5,
                                       y_ref.data(), stats_ref.data(), rows, C);
    INFO("worst forward difference ", worst(y, y_ref));
    CHECK(worst(y, y_ref) < 1e-12);
    CHECK(worst(stats, stats_ref) < 1e-12);

    std::vector<double> dx(rows * C), dw(C), db(C), dx_ref(rows * C), dw_ref(C), db_ref(C);
    kernels::layer_norm_backward_rows(x.data(), wp, stats.data(), dy.data(), dx.data(), dw.data(),
                                      db.data(), rows, C);
    kernels::layer_norm_backward_rows_reference(x.data(), wp, stats.data(), dy.data(),
                                                dx_ref.data(), dw_ref.data(), db_ref.data(), rows,
                                                C);
    INFO("worst dx ", worst(dx, dx_ref), ", dw ", worst(dw, dw_ref), ", db ", worst(db, db_ref));
    CHECK(worst(dx, dx_ref) < 1e-12);
    CHECK(worst(dw, dw_ref) < 1e-12);
    CHECK(worst(db, db_ref) < 1e-12);
  }
}

TEST_CASE("layer_norm_backward_rows leaves out the gradients it is not asked for") {
  const int64_t rows = 5, C = 8;
  const std::vector<double> x = normal_values(rows * C, 5), dy = normal_values(rows * C, 6);
  std::vector<double> y(rows * C), stats(2 * rows), dx(rows * C), dx_all(rows * C), dw(C), db(C);
  kernels::layer_norm_rows<double>(x.data(), nullptr, nullptr, 1e-6, y.data(), stats.data(), rows,
                                   C);
  kernels::layer_norm_backward_rows<double>(x.data(), nullptr, stats.data(), dy.data(), dx.data(),
                                            nullptr, nullptr, rows, C);
  kernels::layer_norm_backward_rows<double>(x.data(), nullptr, stats.data(), dy.data(),
                                            dx_all.data(), dw.data(), db.data(), rows, C);
  CHECK(dx == dx_all);
}

// dx_adds: dx starts as a gradient x has already received; each element ends as that + the
// row's own dx, with the bits of storing dx and adding the two arrays (kernels/add_arrays.h).
TEST_CASE("layer_norm_backward_rows adds into a received dx with the bits of an add after") {
  const int64_t rows = 70, C = 37;
  const std::vector<double> x = normal_values(rows * C, 7), w = normal_values(C, 8),
                            dy = normal_values(rows * C, 9), received = normal_values(rows * C, 10);
  std::vector<double> y(rows * C), stats(2 * rows), own(rows * C), sum(received);
  kernels::layer_norm_rows<double>(x.data(), w.data(), nullptr, 1e-5, y.data(), stats.data(), rows,
                                   C);
  kernels::layer_norm_backward_rows<double>(x.data(), w.data(), stats.data(), dy.data(), own.data(),
                                            nullptr, nullptr, rows, C);
  kernels::layer_norm_backward_rows<double>(x.data(), w.data(), stats.data(), dy.data(), sum.data(),
                                            nullptr, nullptr, rows, C, /*dx_adds=*/true);
  std::vector<double> want(rows * C);
  for (int64_t i = 0; i < rows * C; ++i) want[i] = received[i] + own[i];
  CHECK(sum == want);
  // The same in float.
  auto floats = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  const std::vector<float> xf = floats(x), wf = floats(w), dyf = floats(dy), rf = floats(received);
  std::vector<float> yf(rows * C), ownf(rows * C), sumf(rf), wantf(rows * C);
  kernels::layer_norm_rows<float>(xf.data(), wf.data(), nullptr, 1e-5, yf.data(), stats.data(),
                                  rows, C);
  kernels::layer_norm_backward_rows<float>(xf.data(), wf.data(), stats.data(), dyf.data(),
                                           ownf.data(), nullptr, nullptr, rows, C);
  kernels::layer_norm_backward_rows<float>(xf.data(), wf.data(), stats.data(), dyf.data(),
                                           sumf.data(), nullptr, nullptr, rows, C, true);
  for (int64_t i = 0; i < rows * C; ++i) wantf[i] = rf[i] + ownf[i];
  CHECK(sumf == wantf);
}

// Float rows take the AVX-512 or AVX2 rows where the build has them
// (kernels/layer_norm_rows_avx512.h, kernels/layer_norm_rows_avx2.h; an AVX-512 build has both,
// and the AVX2 rows are called here directly): the generic loops' bits, with and without weight
// and bias, for rows in blocks of four and the rows after them, C around the eight sum lanes'
// edges and vectors with tails, values far from zero, and rows of zeros, of subnormals, with an
// infinity or a NaN.
TEST_CASE("layer_norm_rows on float gives its generic loops' bits") {
  Rng rng(41);
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t C : {1, 7, 8, 9, 37, 64, 192, 200})
    for (int64_t rows : {1, 3, 4, 9})
      for (int kind = 0; kind < 6; ++kind) {
        CAPTURE(C);
        CAPTURE(rows);
        CAPTURE(kind);
        std::vector<float> x = vg::testing::random_floats(rows * C, rng);
        for (float& v : x) v = kind == 1 ? 300.0f + 0.01f * v : kind == 2 ? 0.0f : v;
        if (kind == 3) for (float& v : x) v *= 1e-40f;
        if (kind == 4) x[x.size() / 2] = inf;
        if (kind == 5) x[x.size() / 2] = nan;
        const std::vector<float> w = vg::testing::random_floats(C, rng),
                                 b = vg::testing::random_floats(C, rng);
        for (int affine = 0; affine < 4; ++affine) {
          CAPTURE(affine);
          const float* wp = affine & 1 ? w.data() : nullptr;
          const float* bp = affine & 2 ? b.data() : nullptr;
          std::vector<float> y(rows * C), want(rows * C);
          std::vector<double> stats(2 * rows), want_stats(2 * rows);
          kernels::layer_norm_rows(x.data(), wp, bp, 1e-5, y.data(), stats.data(), rows, C);
          kernels::layer_norm_rows_generic(x.data(), wp, bp, 1e-5, want.data(), want_stats.data(),
                                           rows, C);
          CHECK(vg::testing::same_bits(y, want));
          CHECK(std::memcmp(stats.data(), want_stats.data(), stats.size() * sizeof(double)) == 0);
          if constexpr (detail::kLayerNormRowsAvx2) {
            detail::layer_norm_rows_avx2(x.data(), wp, bp, 1e-5, y.data(), stats.data(), rows, C);
            CHECK(vg::testing::same_bits(y, want));
            CHECK(std::memcmp(stats.data(), want_stats.data(), stats.size() * sizeof(double)) ==
                  0);
          }
          // The values again from the stats, in one pass: the same bits on every route.
          std::vector<float> again(rows * C, -1.0f);
          kernels::layer_norm_apply_rows(x.data(), wp, bp, want_stats.data(), again.data(), rows,
                                         C);
          CHECK(vg::testing::same_bits(again, want));
          std::fill(again.begin(), again.end(), -1.0f);
          kernels::layer_norm_apply_rows_generic(x.data(), wp, bp, want_stats.data(), again.data(),
                                                 rows, C);
          CHECK(vg::testing::same_bits(again, want));
          if constexpr (detail::kLayerNormRowsAvx2) {
            std::fill(again.begin(), again.end(), -1.0f);
            detail::layer_norm_apply_rows_avx2(x.data(), wp, bp, want_stats.data(), again.data(),
                                               rows, C);
            CHECK(vg::testing::same_bits(again, want));
          }
        }
      }
}

// In double, the values again from the stats have layer_norm_rows' bits too.
TEST_CASE("layer_norm_apply_rows gives layer_norm_rows' values from its stats in double") {
  Rng rng(43);
  const int64_t rows = 70, C = 37;  // more rows than one thread's share at this width
  std::vector<double> x(rows * C), w(C), b(C);
  for (double& v : x) v = 3.0 * rng.normal() + 1.0;
  for (double& v : w) v = rng.normal();
  for (double& v : b) v = rng.normal();
  std::vector<double> y(rows * C), again(rows * C, -1.0), stats(2 * rows);
  kernels::layer_norm_rows(x.data(), w.data(), b.data(), 1e-5, y.data(), stats.data(), rows, C);
  kernels::layer_norm_apply_rows(x.data(), w.data(), b.data(), stats.data(), again.data(), rows, C);
  CHECK(std::memcmp(y.data(), again.data(), y.size() * sizeof(double)) == 0);
}
