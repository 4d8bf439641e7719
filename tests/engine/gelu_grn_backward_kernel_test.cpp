// The fused backward of GRN(GELU(h)) against the two-pass route it replaces: the forward kernel
// keeping GELU's values and slope, then GRN's backward with the slope. In float32, where any
// change in the order of operations shows in the bits.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "engine/core/rng.h"
#include "engine/kernels/bf16.h"
#include "engine/kernels/bf16_gemm.h"
#include "engine/kernels/global_response_norm.h"

using namespace vg;

namespace {

struct Case {
  int64_t B, S, C;
  std::vector<float> h, gamma, beta, dy;
};

Case make_case(int64_t B, int64_t S, int64_t C, uint64_t seed) {
  Case k{B,
         S,
         C,
         std::vector<float>(B * S * C),
         std::vector<float>(C),
         std::vector<float>(C),
         std::vector<float>(B * S * C)};
  Rng rng(seed);
  for (float& v : k.h) v = float(2 * rng.normal());
  for (float& v : k.gamma) v = float(rng.normal());
  for (float& v : k.beta) v = float(rng.normal());
  for (float& v : k.dy) v = float(rng.normal());
  for (int64_t s = 0; s < S; ++s) k.h[(1 * S + s) * C + 2] = -30.0f;  // GELU 0: a zero norm
  return k;
}

// What the two-pass route gives: GRN's output y, dh, dgamma, dbeta.
struct TwoPass {
  std::vector<float> y, dh, dgamma, dbeta;
};

TwoPass two_pass(const Case& k, bool tanh_form) {
  const size_t n = k.h.size();
  std::vector<float> act(n), slope(n);
  std::vector<double> stats(k.B * (2 * k.C + 1));
  TwoPass out{std::vector<float>(n), std::vector<float>(n), std::vector<float>(k.C),
              std::vector<float>(k.C)};
  kernels::gelu_grn_samples(k.h.data(), tanh_form, k.gamma.data(), k.beta.data(), 1e-6, act.data(),
                            slope.data(), out.y.data(), stats.data(), k.B, k.S, k.C);
  kernels::global_response_norm_backward_samples(k.dy.data(), act.data(), k.gamma.data(),
                                                 stats.data(), out.dh.data(), out.dgamma.data(),
                                                 out.dbeta.data(), k.B, k.S, k.C, slope.data());
  return out;
}

}  // namespace

TEST_CASE("gelu_grn_backward_samples has the bits of the forward kernel then GRN's backward") {
  for (const int64_t S : {13, 10}) {  // odd and even rows a sample; several samples a thread
    const Case k = make_case(5, S, 24, 11 + uint64_t(S));
    for (bool tanh_form : {false, true}) {
      INFO("S ", S, ", tanh form ", tanh_form);
      const TwoPass want = two_pass(k, tanh_form);
      std::vector<float> a(k.h.size()), dh = k.dy, dgamma(k.C), dbeta(k.C);
      kernels::gelu_grn_backward_samples(k.h.data(), tanh_form, k.gamma.data(), k.beta.data(), 1e-6,
                                         a.data(), dh.data(), true, dgamma.data(), dbeta.data(),
                                         k.B, k.S, k.C);
      CHECK(a == want.y);
      CHECK(dh == want.dh);
      CHECK(dgamma == want.dgamma);
      CHECK(dbeta == want.dbeta);
      // Without dh: dy is left as it was, and the parameter sums are the same.
      std::vector<float> dy = k.dy, dgamma_alone(k.C);
      kernels::gelu_grn_backward_samples<float>(k.h.data(), tanh_form, k.gamma.data(),
                                                k.beta.data(), 1e-6, a.data(), dy.data(), false,
                                                dgamma_alone.data(), nullptr, k.B, k.S, k.C);
      CHECK(dy == k.dy);
      CHECK(dgamma_alone == want.dgamma);
    }
  }
}

TEST_CASE("gelu_grn_backward_samples_bf16 rounds the output by rows and by pairs of rows") {
  const Case k = make_case(3, 6, 23, 5);  // an odd C: the last pair's second half zero
  const int64_t rows = k.B * k.S, pairs = (k.C + 1) / 2;
  const TwoPass want = two_pass(k, false);
  for (bool row_pairs : {false, true}) {
    INFO("by pairs of rows: ", row_pairs);
    const Bf16Rows words = make_bf16_rows(rows, k.C, row_pairs);
    std::fill(words.words(), words.words() + words.word_rows() * words.ld(), 0xDEADBEEFu);
    std::vector<float> dh = k.dy, dgamma(k.C), dbeta(k.C);
    kernels::gelu_grn_backward_samples_bf16(k.h.data(), false, k.gamma.data(), k.beta.data(), 1e-6,
                                            words.words(), row_pairs, dh.data(), true,
                                            dgamma.data(), dbeta.data(), k.B, k.S, k.C);
    CHECK(dh == want.dh);
    CHECK(dgamma == want.dgamma);
    CHECK(dbeta == want.dbeta);
    int64_t wrong = 0;
    const float* y = want.y.data();
    const uint32_t* got = words.words();
    if (row_pairs) {  // word (p, j): column j of rows 2p and 2p + 1, zeros past C
      for (int64_t p = 0; p < rows / 2; ++p)
        for (int64_t j = 0; j < words.ld(); ++j)
          wrong += got[p * words.ld() + j] !=
                   (j < k.C ? bf16_pair(y[2 * p * k.C + j], y[(2 * p + 1) * k.C + j]) : 0u);
    } else {  // word (r, p): values 2p and 2p + 1 of row r
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t p = 0; p < pairs; ++p)
          wrong += got[r * pairs + p] !=
                   bf16_pair(y[r * k.C + 2 * p], 2 * p + 1 < k.C ? y[r * k.C + 2 * p + 1] : 0.0f);
    }
    CHECK(wrong == 0);
  }
}
