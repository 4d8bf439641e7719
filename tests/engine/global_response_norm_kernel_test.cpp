#include "engine/kernels/global_response_norm.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "engine/core/rng.h"

using namespace vg;

TEST_CASE("global_response_norm_samples is within 1e-12 of the channel-by-channel loop") {
  const int64_t B = 3, S = 10, C = 7;
  Rng rng(9);
  std::vector<double> x(B * S * C), gamma(C), beta(C);
  for (double& v : x) v = rng.normal();
  for (double& v : gamma) v = rng.normal();
  for (double& v : beta) v = rng.normal();
  for (int64_t s = 0; s < S; ++s) x[(1 * S + s) * C + 2] = 0;  // a channel of zero norm
  std::vector<double> y(x.size()), y_ref(x.size()), stats(B * (2 * C + 1)),
      stats_ref(B * (2 * C + 1));
  kernels::global_response_norm_samples(x.data(), gamma.data(), beta.data(), 1e-6, y.data(),
                                        stats.data(), B, S, C);
  kernels::global_response_norm_samples_reference(x.data(), gamma.data(), beta.data(), 1e-6,
                                                  y_ref.data(), stats_ref.data(), B, S, C);
  for (size_t i = 0; i < y.size(); ++i) {
    INFO("element ", i, ": kernel ", y[i], ", reference ", y_ref[i]);
    REQUIRE(std::abs(y[i] - y_ref[i]) < 1e-12);
  }
  for (size_t i = 0; i < stats.size(); ++i) CHECK(std::abs(stats[i] - stats_ref[i]) < 1e-12);
}

TEST_CASE("global_response_norm_backward_samples gives dx with and without the parameter sums") {
  const int64_t B = 2, S = 5, C = 4;
  Rng rng(3);
  std::vector<double> x(B * S * C), dy(B * S * C), gamma(C), beta(C, 0.0);
  for (double& v : x) v = rng.normal();
  for (double& v : dy) v = rng.normal();
  for (double& v : gamma) v = rng.normal();
  std::vector<double> y(x.size()), stats(B * (2 * C + 1));
  kernels::global_response_norm_samples(x.data(), gamma.data(), beta.data(), 1e-6, y.data(),
                                        stats.data(), B, S, C);
  std::vector<double> dx(x.size()), dx_alone(x.size()), dgamma(C), dbeta(C);
  kernels::global_response_norm_backward_samples(dy.data(), x.data(), gamma.data(), stats.data(),
                                                 dx.data(), dgamma.data(), dbeta.data(), B, S, C);
  kernels::global_response_norm_backward_samples<double>(dy.data(), x.data(), gamma.data(),
                                                         stats.data(), dx_alone.data(), nullptr,
                                                         nullptr, B, S, C);
  CHECK(dx == dx_alone);
  for (int64_t c = 0; c < C; ++c) {
    double plain = 0;
    for (int64_t i = 0; i < B * S; ++i) plain += dy[i * C + c];
    CHECK(std::abs(dbeta[c] - plain) < 1e-12);
  }
}

TEST_CASE("global_response_norm_backward_samples is within 1e-12 of the formula's plain loops") {
  const int64_t B = 3, S = 10, C = 7;
  Rng rng(4);
  std::vector<double> x(B * S * C), dy(B * S * C), gamma(C), beta(C);
  for (auto* m : {&x, &dy, &gamma, &beta})
    for (double& v : *m) v = rng.normal();
  for (int64_t s = 0; s < S; ++s) x[(2 * S + s) * C + 5] = 0;  // a channel of zero norm
  std::vector<double> y(x.size()), stats(B * (2 * C + 1));
  kernels::global_response_norm_samples(x.data(), gamma.data(), beta.data(), 1e-6, y.data(),
                                        stats.data(), B, S, C);
  std::vector<double> dx(x.size()), dgamma(C), dbeta(C), dx_ref(x.size()), dgamma_ref(C),
      dbeta_ref(C);
  kernels::global_response_norm_backward_samples(dy.data(), x.data(), gamma.data(), stats.data(),
                                                 dx.data(), dgamma.data(), dbeta.data(), B, S, C);
  kernels::global_response_norm_backward_samples_reference(
      dy.data(), x.data(), gamma.data(), stats.data(), dx_ref.data(), dgamma_ref.data(),
      dbeta_ref.data(), B, S, C);
  for (size_t i = 0; i < dx.size(); ++i) {
    INFO("dx element ", i, ": kernel ", dx[i], ", reference ", dx_ref[i]);
    REQUIRE(std::abs(dx[i] - dx_ref[i]) < 1e-12);
  }
  for (int64_t c = 0; c < C; ++c) {
    INFO("channel ", c, ": dgamma ", dgamma[c], " vs ", dgamma_ref[c], ", dbeta ", dbeta[c],
         " vs ", dbeta_ref[c]);
    CHECK(std::abs(dgamma[c] - dgamma_ref[c]) < 1e-12);
    CHECK(std::abs(dbeta[c] - dbeta_ref[c]) < 1e-12);
  }
}
