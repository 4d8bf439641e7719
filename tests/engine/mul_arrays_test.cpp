#include "engine/kernels/mul_arrays.h"

#include <doctest/doctest.h>

#include <vector>

#include "engine/core/rng.h"

using namespace vg;

TEST_CASE("mul_arrays gives the same bits as the serial loop over several threads' shares") {
  const int64_t n = 100000;
  Rng rng(6);
  std::vector<float> a(n), b(n), out(n), out_ref(n);
  for (float& v : a) v = float(rng.normal());
  for (float& v : b) v = rng.uniform() < 0.5 ? 0.0f : 2.0f;  // a dropout mask's scales
  kernels::mul_arrays(a.data(), b.data(), out.data(), n);
  kernels::mul_arrays_reference(a.data(), b.data(), out_ref.data(), n);
  CHECK(out == out_ref);
  CHECK(out[3] == a[3] * b[3]);
}
