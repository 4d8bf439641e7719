#include "engine/kernels/channel_affine_rows.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "engine/core/rng.h"

using namespace vg;

// 300 rows: several blocks of 64 and a partial one.
TEST_CASE("channel_affine_backward_rows is within 1e-12 of the plain loop in float64") {
  const int64_t rows = 300, C = 19;
  Rng rng(2);
  std::vector<double> x(rows * C), dy(rows * C), scale(C);
  for (double& v : x) v = rng.normal();
  for (double& v : dy) v = rng.normal();
  for (double& v : scale) v = rng.normal();
  std::vector<double> dx(rows * C), ds(C), db(C), dx_ref(rows * C), ds_ref(C), db_ref(C);
  kernels::channel_affine_backward_rows(dy.data(), x.data(), scale.data(), dx.data(), ds.data(),
                                        db.data(), rows, C);
  kernels::channel_affine_backward_rows_reference(dy.data(), x.data(), scale.data(), dx_ref.data(),
                                                  ds_ref.data(), db_ref.data(), rows, C);
  CHECK(dx == dx_ref);
  for (int64_t c = 0; c < C; ++c) {
    INFO("channel ", c, ": dscale ", ds[c], " vs ", ds_ref[c], ", dshift ", db[c], " vs ",
         db_ref[c]);
    CHECK(std::abs(ds[c] - ds_ref[c]) < 1e-12);
    CHECK(std::abs(db[c] - db_ref[c]) < 1e-12);
  }
}

// 3000 rows of 40 channels: enough for the rows to be split over threads.
TEST_CASE("channel_affine_rows gives the same bits as the plain loop, with and without shift") {
  const int64_t rows = 3000, C = 40;
  Rng rng(5);
  std::vector<float> x(rows * C), scale(C), shift(C);
  for (float& v : x) v = float(rng.normal());
  for (float& v : scale) v = float(rng.normal());
  for (float& v : shift) v = float(rng.normal());
  const float* shift_or_none[] = {shift.data(), nullptr};
  for (const float* b : shift_or_none) {
    CAPTURE(b != nullptr);
    std::vector<float> y(rows * C), y_ref(rows * C);
    kernels::channel_affine_rows(x.data(), scale.data(), b, y.data(), rows, C);
    kernels::channel_affine_rows_reference(x.data(), scale.data(), b, y_ref.data(), rows, C);
    CHECK(y == y_ref);
  }
}

TEST_CASE("channel_affine_rows scales and shifts each channel") {
  const std::vector<float> x{1, 2, 3, 4}, scale{10, -1}, shift{0.5f, 0.25f};
  std::vector<float> y(4), y_no_shift(4);
  kernels::channel_affine_rows(x.data(), scale.data(), shift.data(), y.data(), 2, 2);
  kernels::channel_affine_rows(x.data(), scale.data(), static_cast<const float*>(nullptr),
                               y_no_shift.data(), 2, 2);
  CHECK(y == std::vector<float>{10.5f, -1.75f, 30.5f, -3.75f});
  CHECK(y_no_shift == std::vector<float>{10, -2, 30, -4});
}

// dx_adds: dx holds a gradient x has already received; each element ends as that + dy * scale,
// with the bits of storing dy * scale and adding the two arrays (no fma of the two).
TEST_CASE("channel_affine_backward_rows adds into a received dx with the bits of an add after") {
  const int64_t rows = 300, C = 19;
  Rng rng(3);
  auto check_type = [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> dy(rows * C), scale(C), received(rows * C);
    for (T& v : dy) v = T(rng.normal());
    for (T& v : scale) v = T(rng.normal());
    for (T& v : received) v = T(rng.normal());
    std::vector<T> own(rows * C), sum(received), want(rows * C);
    kernels::channel_affine_backward_rows<T>(dy.data(), nullptr, scale.data(), own.data(), nullptr,
                                             nullptr, rows, C);
    kernels::channel_affine_backward_rows<T>(dy.data(), nullptr, scale.data(), sum.data(), nullptr,
                                             nullptr, rows, C, /*dx_adds=*/true);
    for (int64_t i = 0; i < rows * C; ++i) want[i] = received[i] + own[i];
    CHECK(sum == want);
  };
  check_type(float{});
  check_type(double{});
}
