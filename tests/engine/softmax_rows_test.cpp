#include "engine/kernels/softmax_rows.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "engine/core/rng.h"

using namespace vg;

namespace {

template <class T>
std::vector<T> normal_values(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<T> x(n);
  for (T& v : x) v = T(3 * rng.normal());
  return x;
}

template <class T>
double worst(const std::vector<T>& a, const std::vector<T>& b) {
  double w = 0;
  for (size_t i = 0; i < a.size(); ++i) w = std::max(w, std::abs(double(a[i]) - double(b[i])));
  return w;
}

}  // namespace

TEST_CASE("softmax_rows and log-softmax rows are within 1e-12 of the plain loops in float64") {
  const int64_t rows = 6, C = 29;
  const auto x = normal_values<double>(rows * C, 1), dy = normal_values<double>(rows * C, 2);
  for (bool log : {false, true}) {
    INFO("log_softmax: ", log);
    std::vector<double> y(rows * C), y_ref(rows * C), dx(rows * C), dx_ref(rows * C);
    kernels::softmax_rows(x.data(), y.data(), rows, C, log);
    kernels::softmax_rows_reference(x.data(), y_ref.data(), rows, C, log);
    INFO("worst forward difference ", worst(y, y_ref));
    CHECK(worst(y, y_ref) < 1e-12);
    kernels::softmax_backward_rows(y.data(), dy.data(), dx.data(), rows, C, log);
    kernels::softmax_backward_rows_reference(y.data(), dy.data(), dx_ref.data(), rows, C, log);
    INFO("worst backward difference ", worst(dx, dx_ref));
    CHECK(worst(dx, dx_ref) < 1e-12);
  }
}

// vec::exp's polynomial is within about 1 float ulp of exp; the softmax adds a few roundings.
TEST_CASE("softmax_rows in float32 is within 1e-6 of the plain loop with std::exp") {
  const int64_t rows = 4, C = 100;
  const auto x = normal_values<float>(rows * C, 3);
  std::vector<float> y(rows * C), y_ref(rows * C);
  kernels::softmax_rows(x.data(), y.data(), rows, C, false);
  kernels::softmax_rows_reference(x.data(), y_ref.data(), rows, C, false);
  INFO("worst difference ", worst(y, y_ref));
  CHECK(worst(y, y_ref) < 1e-6);
}
