#include <doctest/doctest.h>

#include <cmath>

#include "engine/autograd/autograd.h"
#include "tests/engine/gradcheck_helpers.h"
#include "tests/engine/nn_references.h"

using namespace vg;
using vg::testing::expect_gradients;
using vg::testing::reference_cross_entropy;
using vg::testing::row_sums;
using vg::testing::variable;

TEST_CASE("cross_entropy of uniform logits is ln K, with or without smoothing") {
  Tensor z = zeros({4, 10}, DType::f64);
  for (double eps : {0.0, 0.1}) {
    CHECK(cross_entropy(z, {0, 3, 9, 5}, eps).item() == doctest::Approx(2.302585093).epsilon(1e-9));
  }
}

TEST_CASE("cross_entropy with label smoothing 0.1 over 10 classes bottoms out at 0.500288") {
  // logits log(q) make softmax equal the smoothed target q, the minimum: H(q), not 0.
  std::vector<double> logq(10, std::log(0.01));
  logq[3] = std::log(0.91);
  Tensor z = from_vector(logq, {1, 10}).set_requires_grad();
  Tensor loss = cross_entropy(z, {3}, 0.1);
  CHECK(loss.item() == doctest::Approx(0.500288).epsilon(1e-6));
  loss.backward();
  CHECK(max(abs(z.grad())).item() < 1e-15);
}

TEST_CASE("cross_entropy gradients are (softmax - q) / B and sum to zero per sample") {
  Tensor z = variable({5, 7}, 19);
  const std::vector<int32_t> labels{0, 6, 2, 2, 4};
  cross_entropy(z, labels, 0.1).backward();
  for (double s : row_sums(z.grad())) CHECK(std::fabs(s) < 1e-16);
  Tensor p = softmax(z.detach());
  for (int64_t b = 0; b < 5; ++b) {
    for (int64_t k = 0; k < 7; ++k) {
      const double q = (k == labels[b] ? 0.9 : 0.0) + 0.1 / 7;
      CHECK(z.grad().at({b, k}) == doctest::Approx((p.at({b, k}) - q) / 5).epsilon(1e-12));
    }
  }
  CHECK(cross_entropy(z, labels, 0.1).item() ==
        doctest::Approx(reference_cross_entropy(z, labels, 0.1).item()).epsilon(1e-13));
}

TEST_CASE("soft-target cross_entropy equals hard cross_entropy with one-hot targets") {
  Tensor z = variable({4, 6}, 20);
  const std::vector<int32_t> labels{5, 0, 3, 3};
  Tensor onehot = zeros({4, 6}, DType::f64);
  for (int64_t b = 0; b < 4; ++b) onehot.set_at({b, labels[b]}, 1);
  Tensor soft = cross_entropy(z, onehot);
  soft.backward();
  const Tensor soft_grad = z.grad();
  z.zero_grad();
  Tensor hard = cross_entropy(z, labels);
  hard.backward();
  CHECK(soft.item() == doctest::Approx(hard.item()).epsilon(1e-14));
  CHECK(max(abs(soft_grad - z.grad())).item() < 1e-16);
}

TEST_CASE("cross_entropy passes gradcheck with and without smoothing and with soft targets") {
  Tensor z = variable({4, 5}, 21);
  const std::vector<int32_t> labels{1, 4, 0, 1};
  for (double eps : {0.0, 0.1, 1.0}) {
    INFO("label_smoothing ", eps);
    expect_gradients("cross_entropy", [&](auto& in) { return cross_entropy(in[0], labels, eps); },
                     {z});
  }
  Tensor t = softmax(variable({4, 5}, 22).detach() * 2.0);
  expect_gradients("soft cross_entropy", [&](auto& in) { return cross_entropy(in[0], t); }, {z});
}
