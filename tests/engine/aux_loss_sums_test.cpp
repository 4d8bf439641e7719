#include "engine/kernels/aux_loss_sums.h"

#include <doctest/doctest.h>

#include <vector>

using namespace vg;

// Threshold 1: dangers 2 (x = -3), 0.5, 2 (x = 3); 1 and -0.5 are not above it.
TEST_CASE("feature_decay_sums counts the elements above the threshold, their sum and top ties") {
  const std::vector<double> x{-3, 1.5, 1, 3, -0.5};
  const kernels::FeatureDecaySums s = kernels::feature_decay_sums(x.data(), 5, 1.0);
  CHECK(s.count == 3);
  CHECK(s.sum == 4.5);
  CHECK(s.top == 2);
  CHECK(s.ties == 2);
  std::vector<double> dx(5);
  kernels::feature_decay_grad(x.data(), 5, 1.0, s.top, 0.25, 0.5, dx.data());
  CHECK(dx == std::vector<double>{-0.75, 0.25, 0, 0.75, 0});
}

TEST_CASE("peaks_below reports each row whose maximum is under the level, at its first maximum") {
  // Rows: peak 0.7 (fine), tie of 0.4 (below, first at index 3), peak 0.5 (below, index 8).
  const std::vector<float> p{0.7f, 0.2f, 0.1f, 0.4f, 0.4f, 0.2f, 0.25f, 0.25f, 0.5f};
  std::vector<int64_t> bad_at(3, -1);
  double sum = 0;
  const int64_t bad = kernels::peaks_below(p.data(), 3, 3, 0.6, bad_at.data(), &sum);
  CHECK(bad == 2);
  CHECK(bad_at[0] == 3);
  CHECK(bad_at[1] == 8);
  CHECK(sum == double(0.4f) + double(0.5f));
}
