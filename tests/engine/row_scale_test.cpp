#include "engine/kernels/row_scale.h"

#include <doctest/doctest.h>

#include <vector>

using namespace vg;

TEST_CASE("scale_rows multiplies row o by s[o]") {
  const std::vector<float> w{1, 2, 3, 4, 5, 6}, s{2, -0.5f};
  std::vector<float> out(6);
  kernels::scale_rows(w.data(), s.data(), out.data(), 2, 3);
  CHECK(out == std::vector<float>{2, 4, 6, -2, -2.5f, -3});
}

TEST_CASE("scale_grad_rows is the row dot of W and G, plus b times the column sum") {
  const std::vector<double> w{1, 2, 3, 4}, G{0.5, 1, -1, 2}, b{10, 20}, col{0.25, -1};
  std::vector<double> ds(2), ds_no_bias(2);
  kernels::scale_grad_rows(w.data(), G.data(), b.data(), col.data(), ds.data(), 2, 2);
  kernels::scale_grad_rows(w.data(), G.data(), static_cast<const double*>(nullptr),
                           static_cast<const double*>(nullptr), ds_no_bias.data(), 2, 2);
  CHECK(ds_no_bias == std::vector<double>{2.5, 5});
  CHECK(ds == std::vector<double>{2.5 + 2.5, 5 - 20});
}
