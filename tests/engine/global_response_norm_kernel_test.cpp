#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/core/rng.h"
#include "engine/kernels/bf16.h"
#include "engine/kernels/gelu_slope.h"
#include "engine/kernels/global_response_norm.h"

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

namespace {

struct GeluGrnInputs {
  std::vector<float> h, gamma, beta;
};

// h (B, S, C) of GELU's interesting range, and GRN's gamma and beta.
GeluGrnInputs gelu_grn_inputs(int64_t B, int64_t S, int64_t C, uint64_t seed) {
  Rng rng(seed);
  GeluGrnInputs in{std::vector<float>(B * S * C), std::vector<float>(C), std::vector<float>(C)};
  for (float& v : in.h) v = float(2 * rng.normal());
  for (float& v : in.gamma) v = float(rng.normal());
  for (float& v : in.beta) v = float(rng.normal());
  return in;
}

}  // namespace

// gelu_grn_samples against its two kernels run one after the other, in float32 where the
// order of operations shows in the bits: values, GELU's values and slope, and statistics.
TEST_CASE("gelu_grn_samples has the bits of gelu_with_slope then global_response_norm_samples") {
  const int64_t B = 5, S = 13, C = 24;  // more than one sample per thread
  const auto [h, gamma, beta] = gelu_grn_inputs(B, S, C, 6);
  for (bool tanh_form : {false, true}) {
    INFO("tanh form: ", tanh_form);
    std::vector<float> a(h.size()), slope(h.size()), y(h.size());
    std::vector<double> stats(B * (2 * C + 1));
    kernels::gelu_with_slope(h.data(), a.data(), slope.data(), int64_t(h.size()), tanh_form);
    kernels::global_response_norm_samples(a.data(), gamma.data(), beta.data(), 1e-6, y.data(),
                                          stats.data(), B, S, C);
    std::vector<float> a_kept(h.size()), slope_kept(h.size()), y_kept(h.size()), y_alone(h.size());
    std::vector<double> stats_kept(stats.size()), stats_alone(stats.size());
    kernels::gelu_grn_samples(h.data(), tanh_form, gamma.data(), beta.data(), 1e-6, a_kept.data(),
                              slope_kept.data(), y_kept.data(), stats_kept.data(), B, S, C);
    kernels::gelu_grn_samples<float>(h.data(), tanh_form, gamma.data(), beta.data(), 1e-6,
                                     nullptr, nullptr, y_alone.data(), stats_alone.data(), B, S,
                                     C);
    CHECK(a_kept == a);
    CHECK(slope_kept == slope);
    CHECK(y_kept == y);
    CHECK(y_alone == y);
    CHECK(stats_kept == stats);
    CHECK(stats_alone == stats);
  }
}

TEST_CASE("gelu_grn_samples_bf16 has gelu_grn_samples' bits, its output rounded into pairs") {
  const int64_t B = 5, S = 13, C = 23;  // an odd C: each row's last pair half zero
  const int64_t pairs = (C + 1) / 2;
  const auto [h, gamma, beta] = gelu_grn_inputs(B, S, C, 8);
  for (bool tanh_form : {false, true}) {
    INFO("tanh form: ", tanh_form);
    std::vector<float> a(h.size()), slope(h.size()), y(h.size());
    std::vector<double> stats(B * (2 * C + 1));
    kernels::gelu_grn_samples(h.data(), tanh_form, gamma.data(), beta.data(), 1e-6, a.data(),
                              slope.data(), y.data(), stats.data(), B, S, C);
    std::vector<float> a_words(h.size()), slope_words(h.size());
    std::vector<double> stats_words(stats.size()), stats_alone(stats.size());
    std::vector<uint32_t> words(B * S * pairs, 0xDEADBEEFu), alone(words.size(), 0xDEADBEEFu);
    kernels::gelu_grn_samples_bf16(h.data(), tanh_form, gamma.data(), beta.data(), 1e-6,
                                   a_words.data(), slope_words.data(), words.data(),
                                   stats_words.data(), B, S, C);
    kernels::gelu_grn_samples_bf16(h.data(), tanh_form, gamma.data(), beta.data(), 1e-6, nullptr,
                                   nullptr, alone.data(), stats_alone.data(), B, S, C);
    CHECK(a_words == a);
    CHECK(slope_words == slope);
    CHECK(stats_words == stats);
    CHECK(stats_alone == stats);
    CHECK(alone == words);
    int64_t wrong = 0;
    for (int64_t r = 0; r < B * S; ++r)
      for (int64_t p = 0; p < pairs; ++p) {
        const float second = 2 * p + 1 < C ? y[r * C + 2 * p + 1] : 0.0f;
        wrong += words[r * pairs + p] != bf16_pair(y[r * C + 2 * p], second);
      }
    CHECK(wrong == 0);
  }
}

TEST_CASE("global_response_norm_backward_samples with dx_scale has the bits of dx times it") {
  const int64_t B = 3, S = 11, C = 20;
  Rng rng(7);
  std::vector<float> x(B * S * C), dy(B * S * C), scale(B * S * C), gamma(C), beta(C);
  for (auto* m : {&x, &dy, &scale, &gamma, &beta})
    for (float& v : *m) v = float(rng.normal());
  std::vector<float> y(x.size());
  std::vector<double> stats(B * (2 * C + 1));
  kernels::global_response_norm_samples(x.data(), gamma.data(), beta.data(), 1e-6, y.data(),
                                        stats.data(), B, S, C);
  std::vector<float> dx(x.size()), dx_scaled(x.size()), dgamma(C), dbeta(C), dgamma_s(C),
      dbeta_s(C);
  kernels::global_response_norm_backward_samples(dy.data(), x.data(), gamma.data(), stats.data(),
                                                 dx.data(), dgamma.data(), dbeta.data(), B, S, C);
  kernels::global_response_norm_backward_samples(dy.data(), x.data(), gamma.data(), stats.data(),
                                                 dx_scaled.data(), dgamma_s.data(),
                                                 dbeta_s.data(), B, S, C, scale.data());
  for (size_t i = 0; i < dx.size(); ++i) dx[i] = dx[i] * scale[i];
  CHECK(dx_scaled == dx);
  CHECK(dgamma_s == dgamma);  // the parameters' sums do not see the scale
  CHECK(dbeta_s == dbeta);
}
