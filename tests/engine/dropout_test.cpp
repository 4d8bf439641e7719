#include <doctest/doctest.h>

#include <cmath>

#include "engine/autograd/autograd.h"
#include "engine/core/rng.h"
#include "tests/engine/gradcheck_helpers.h"

using namespace vg;
using vg::testing::expect_gradients;
using vg::testing::variable;

TEST_CASE("dropout keeps about 1 - p of the elements and scales them by 1 / (1 - p)") {
  Rng rng(23);
  Tensor x = ones({100, 100});
  Tensor y = dropout(x, 0.3, rng);
  int64_t kept = 0;
  for (double v : y.to_vector()) {
    if (v != 0) {
      CHECK(v == doctest::Approx(1 / 0.7).epsilon(1e-7));
      ++kept;
    }
  }
  CHECK(std::fabs(kept / 10000.0 - 0.7) < 0.02);
}

TEST_CASE("dropout is the identity in eval mode and for p = 0, and a seed fixes its mask") {
  Rng rng(24);
  Tensor x = variable({3, 8}, 25);
  CHECK(dropout(x, 0.5, rng, false).impl() == x.impl());
  CHECK(dropout(x, 0.0, rng, true).impl() == x.impl());
  Rng a(26), b(26);
  CHECK(dropout(x, 0.5, a).to_vector() == dropout(x, 0.5, b).to_vector());
  // The backward reuses the mask: dx = dy * mask / (1 - p), i.e. y / x here.
  Rng c(27);
  Tensor y = dropout(x, 0.25, c);
  sum(y).backward();
  CHECK(max(abs(x.grad() * x.detach() - y.detach())).item() < 1e-15);
}

TEST_CASE("dropout passes gradcheck with a fixed mask") {
  Tensor x = variable({4, 6}, 28);
  expect_gradients(
      "dropout",
      [](auto& in) {
        Rng rng(29);  // reseeded on every call, so every evaluation draws the same mask
        return dropout(in[0], 0.4, rng);
      },
      {x});
}
