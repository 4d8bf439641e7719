#include "engine/kernels/cross_entropy_rows.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "engine/core/rng.h"

using namespace vg;

TEST_CASE("cross_entropy_rows is within 1e-12 of the plain loop in float64, smoothed or not") {
  const int64_t B = 9, K = 11;
  Rng rng(4);
  std::vector<double> z(B * K);
  for (double& v : z) v = 4 * rng.normal();
  std::vector<int32_t> labels(B);
  for (int64_t b = 0; b < B; ++b) labels[b] = int32_t((b * 7) % K);
  for (double eps : {0.0, 0.1}) {
    std::vector<double> lse(B), loss(B), lse_ref(B), loss_ref(B);
    kernels::cross_entropy_rows(z.data(), labels.data(), B, K, eps, lse.data(), loss.data());
    kernels::cross_entropy_rows_reference(z.data(), labels.data(), B, K, eps, lse_ref.data(),
                                          loss_ref.data());
    for (int64_t b = 0; b < B; ++b) {
      INFO("eps ", eps, ", row ", b, ": loss ", loss[b], ", plain loop ", loss_ref[b]);
      CHECK(std::abs(lse[b] - lse_ref[b]) < 1e-12);
      CHECK(std::abs(loss[b] - loss_ref[b]) < 1e-12);
    }
  }
}

TEST_CASE("soft cross-entropy with one-hot targets has the loss and gradient of the labels") {
  const int64_t B = 3, K = 5;
  Rng rng(6);
  std::vector<double> z(B * K), t(B * K, 0.0);
  for (double& v : z) v = rng.normal();
  const std::vector<int32_t> labels{1, 4, 0};
  for (int64_t b = 0; b < B; ++b) t[b * K + labels[b]] = 1.0;
  std::vector<double> lse(B), loss(B), soft_lse(B), soft_loss(B);
  kernels::cross_entropy_rows(z.data(), labels.data(), B, K, 0.0, lse.data(), loss.data());
  kernels::soft_cross_entropy_rows(z.data(), t.data(), B, K, soft_lse.data(), soft_loss.data());
  std::vector<double> dz(B * K), soft_dz(B * K);
  kernels::cross_entropy_grad_rows(z.data(), labels.data(), lse.data(), B, K, 0.0, 0.5, dz.data());
  kernels::soft_cross_entropy_grad_rows(z.data(), t.data(), lse.data(), B, K, 0.5, soft_dz.data());
  for (int64_t b = 0; b < B; ++b) CHECK(std::abs(loss[b] - soft_loss[b]) < 1e-12);
  for (int64_t i = 0; i < B * K; ++i) CHECK(std::abs(dz[i] - soft_dz[i]) < 1e-15);
}
