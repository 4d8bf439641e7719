#include "engine/kernels/add_arrays.h"

#include <doctest/doctest.h>

#include <vector>

using namespace vg;

TEST_CASE("add_arrays adds elementwise, into a new array or in place") {
  const int64_t n = 70000;  // more than one thread's share
  std::vector<float> a(n), b(n), out(n);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = 0.1f * float(i % 97);
    b[i] = -0.3f * float(i % 13);
  }
  kernels::add_arrays(a.data(), b.data(), out.data(), n);
  for (int64_t i = 0; i < n; i += 997) CHECK(out[i] == a[i] + b[i]);
  std::vector<float> acc = a;
  kernels::add_arrays(acc.data(), b.data(), acc.data(), n);
  CHECK(acc == out);
}
