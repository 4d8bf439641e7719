// bf16 products (engine/kernels/bf16_gemm.h) against a float64 reference, within a bound that
// follows from how they round.
#include "engine/kernels/bf16_gemm.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/parallel.h"
#include "engine/core/rng.h"
#include "engine/kernels/bf16.h"
#include "engine/kernels/blas.h"
#include "engine/kernels/matmul_precision.h"
#include "engine/kernels/precision_choice.h"
#include "tests/engine/bf16_tiles_helpers.h"
#include "tests/engine/bits_helpers.h"

using namespace vg;
using vg::testing::random_floats;

namespace {

bool have_bf16() {
  return bf16_hardware() != Bf16Hardware::none;
}

// gamma_n = n u / (1 - n u), u = 2^-24: the classic bound on the relative error of n float
// roundings applied in sequence (Higham, Accuracy and Stability, 3.1).
double gamma(int64_t n) {
  const double u = std::ldexp(1.0, -24);
  return double(n) * u / (1.0 - double(n) * u);
}

// The bounds, for one element of C = alpha (start + sum_l a_l b_l) + beta c0:
// - rounding an operand to bf16 (8 significant bits, to nearest) moves it by at most half a
//   unit in its last place, u_b = 2^-8 of itself, so each product moves by at most
//   (2 u_b + u_b^2) |a_l b_l|;
// - the product of two bf16 is exact in float (8 + 8 bits < 24), and each term then takes part
//   in at most k additions of the chain, the addition of its chunk to C, alpha's product and
//   beta's sum: at most k + 3 float roundings, gamma_{k+3} of the sum of the terms' sizes.
// `rounded_only`: the bound against a reference that rounded the operands to bf16 already.
struct Bound {
  double terms = 0, rest = 0;  // |alpha| (|start| + sum |a_l b_l|), |beta c0|
  double of(int64_t k, bool rounded_only) const {
    const double ub = std::ldexp(1.0, -8), rounding = rounded_only ? 0.0 : 2 * ub + ub * ub;
    return rounding * terms + gamma(k + 3) * (1 + rounding) * terms + gamma(2) * rest;
  }
};

struct Case {
  bool ta, tb;
  int64_t m, n, k;
  float alpha, beta;
  bool with_start;
  Bf16Tiles tiles = Bf16Tiles::best;
  bool tight = false;  // rows of A and B end to end (lda, ldb as small as they can be)
};

// The loops this CPU can run (the plain model of the AMX tiles on any CPU).
std::vector<Bf16Tiles> runnable_tiles() {
  return testing::bf16_tiles_here();
}

// Runs gemm_bf16 on one and on two threads (the same bits), checks it against the float64 sum
// of the float operands and against gemm_bf16_reference, each within its bound, and reports
// the worst element.
void check_case(const Case& s) {
  CAPTURE(s.ta);
  CAPTURE(s.tb);
  CAPTURE(s.m);
  CAPTURE(s.n);
  CAPTURE(s.k);
  CAPTURE(s.beta);
  CAPTURE(s.with_start);
  CAPTURE(int(s.tiles));
  CAPTURE(s.tight);
  Rng rng(uint64_t(s.m * 131 + s.n * 7 + s.k));
  const int64_t lda = (s.ta ? s.m : s.k) + (s.tight ? 0 : 3);
  const int64_t ldb = (s.tb ? s.k : s.n) + (s.tight ? 0 : 5), ldc = s.n + 2;
  const auto a = random_floats((s.ta ? s.k : s.m) * lda, rng);
  const auto b = random_floats((s.tb ? s.n : s.k) * ldb, rng);
  const auto c0 = random_floats(s.m * ldc, rng), start = random_floats(s.n, rng);
  const float* st = s.with_start ? start.data() : nullptr;
  std::vector<std::vector<float>> got;
  const int threads = num_threads();
  for (int t : {1, 2}) {
    set_num_threads(t);
    std::vector<float> c = c0;
    gemm_bf16(s.ta, s.tb, s.m, s.n, s.k, s.alpha, a.data(), lda, b.data(), ldb, s.beta, c.data(),
              ldc, st, s.tiles);
    got.push_back(c);
  }
  set_num_threads(threads);
  CHECK(got[0] == got[1]);
  std::vector<float> reference = c0;
  gemm_bf16_reference(s.ta, s.tb, s.m, s.n, s.k, s.alpha, a.data(), lda, b.data(), ldb, s.beta,
                      reference.data(), ldc, st);
  double worst = 0, worst_rounded = 0;  // error / bound
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      double exact = st ? double(st[j]) : 0.0;
      Bound bound;
      bound.terms = st ? std::abs(double(st[j])) : 0.0;
      for (int64_t l = 0; l < s.k; ++l) {
        const double x = s.ta ? a[l * lda + i] : a[i * lda + l];
        const double y = s.tb ? b[j * ldb + l] : b[l * ldb + j];
        exact += x * y;
        bound.terms += std::abs(x * y);
      }
      bound.terms *= std::abs(s.alpha);
      const double c_before = (st || s.beta == 0.0f) ? 0.0 : double(s.beta) * c0[i * ldc + j];
      bound.rest = std::abs(c_before);
      exact = s.alpha * exact + c_before;
      const double value = got[0][i * ldc + j];
      worst = std::max(worst, std::abs(value - exact) / bound.of(s.k, false));
      // The reference's operands are the same bf16 and its sum is double; the bound on the bf16
      // terms equals the bound on the float terms up to u_b, which the factor 1.01 covers.
      worst_rounded = std::max(worst_rounded, std::abs(value - double(reference[i * ldc + j])) /
                                                  (1.01 * bound.of(s.k, true)));
    }
  CHECK(worst <= 1.0);
  CHECK(worst_rounded <= 1.0);
  for (int64_t i = 0; i < s.m; ++i)  // the columns between n and ldc are not touched
    for (int64_t j = s.n; j < ldc; ++j) CHECK(got[0][i * ldc + j] == c0[i * ldc + j]);
}

}  // namespace

// Shapes of this project: linear layers (rows = tokens of a batch, k and n 64..768, weight
// gradients with a long k cut in chunks of 512 terms) and attention heads (50 x 50 x 16..64).
// They cover a remainder of 1 to 5 rows below the 6-row tiles, a last vector of 1 to 15 lanes,
// 1 to 4 vectors across a panel, narrow C (16 wide or less, 12-row tiles), odd k and k = 1,
// and C shared among threads by rows and by columns.
TEST_CASE(
    "gemm_bf16 matches a float64 reference within the bound of bf16 operands and float sums") {
  for (const Bf16Tiles tiles : runnable_tiles()) {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        check_case({ta, tb, 50, 50, 16, 0.25f, 0.0f, false, tiles});  // S = s Q K^T
        check_case({ta, tb, 50, 64, 50, 1.0f, 0.0f, false, tiles});   // O = P V
        check_case({ta, tb, 50, 16, 50, 1.0f, 1.0f, false, tiles});   // narrow
        check_case({ta, tb, 200, 192, 64, 1.0f, 0.0f, false, tiles});
        check_case({ta, tb, 67, 33, 31, 2.0f, 0.5f, false, tiles});
        check_case({ta, tb, 13, 70, 1, 1.0f, 1.0f, false, tiles});
        check_case({ta, tb, 48, 100, 1100, 1.0f, 0.0f, false, tiles});  // 3 chunks of k, 1 short
      }
    check_case({false, true, 300, 200, 192, 1.0f, 0.0f, true, tiles});  // a linear forward
    check_case({false, true, 64, 769, 768, 1.0f, 0.0f, true, tiles});
    check_case({true, false, 192, 64, 3200, 1.0f, 1.0f, false, tiles});  // a weight gradient
    // A convolution's weight gradient: C wider than tall, shared among threads by columns
    // (with the start offset to each thread's columns), and a narrow one by rows.
    check_case({true, false, 32, 290, 1500, 1.0f, 0.0f, true, tiles});
    check_case({true, true, 32, 9, 2100, 1.0f, 1.0f, false, tiles});
    check_case({false, false, 5, 7, 0, 1.0f, 0.5f, false, tiles});  // k = 0: only beta
    // Rows end to end: packed as one long row when k is even (and row by row when it is odd).
    for (bool tb : {false, true}) {
      check_case({false, tb, 100, 50, 16, 0.25f, 0.0f, false, tiles, true});
      check_case({false, tb, 130, 70, 64, 1.0f, 0.5f, true, tiles, true});
      check_case({false, tb, 97, 40, 33, 1.0f, 0.0f, false, tiles, true});
    }
  }
}

// tdpbf16ps sums each step of 16 pairs in two float chains, the pairs' first terms in one and
// their second terms in the other, then adds the two chains and then that to the tile's sum
// (measured on Sapphire Rapids class hardware; vdpbf16ps instead adds both terms of each pair
// in turn, and float fmas each term). With one row of A = (2^24, -2^24), (1, 0) x 15 and B all
// ones, the first chain stays at 2^24 (2^24 + 1 is a tie, rounded to even) and cancels the second:
// the tiles give 0, where pair-by-pair sums give 15.
TEST_CASE("the model of the AMX tiles sums a step's first and second terms apart, as tdpbf16ps") {
  const int64_t k = 32;
  std::vector<float> a(k, 0.0f), b(k, 1.0f);
  a[0] = 16777216.0f, a[1] = -16777216.0f;
  for (int64_t l = 2; l < k; l += 2) a[l] = 1.0f;
  for (const Bf16Tiles tiles : runnable_tiles()) {
    CAPTURE(int(tiles));
    float c = -1.0f;
    gemm_bf16(false, false, 1, 1, k, 1.0f, a.data(), k, b.data(), 1, 0.0f, &c, 1, nullptr, tiles);
    const bool pair_by_pair = tiles == Bf16Tiles::avx512_bf16 || tiles == Bf16Tiles::fma;
    CHECK(c == (pair_by_pair ? 15.0f : 0.0f));
  }
}

// The AMX tiles against their plain model, bit for bit: the project's product shapes, with and
// without a start vector, a C summed into (beta = 1), alpha and beta applied after the tiles,
// blocks at C's edges, chunks of k, and operands near the bottom of the float range, whose
// subnormal products and sums the tiles flush to zero. On one and two threads.
TEST_CASE("on an AMX machine the tiles give the bits of their model") {
  if (bf16_hardware() != Bf16Hardware::amx) {
    MESSAGE("skipped: this CPU has no AMX-BF16");
    return;
  }
  const Case shapes[] = {
      {false, true, 700, 192, 64, 1.0f, 0.0f, true},    // a linear forward with its bias
      {false, false, 700, 64, 256, 1.0f, 0.0f, false},  // its input gradient
      {true, false, 192, 64, 1300, 1.0f, 0.0f, false},  // its weight gradient: chunks of k
      {true, false, 64, 288, 1700, 1.0f, 1.0f, false},  // a convolution's, summed into C
      {false, true, 900, 32, 9, 1.0f, 0.0f, true},      // a grey image's first convolution
      {false, true, 50, 50, 64, 0.125f, 0.0f, false},   // attention scores, scaled
      {false, false, 50, 64, 50, 1.0f, 0.0f, false},    // attention output
      {true, true, 67, 33, 31, 2.0f, 0.5f, false},      // alpha and beta after the tiles
      {false, false, 45, 70, 800, 1.0f, 1.0f, false},   // two chunks, C summed into
  };
  const int threads = num_threads();
  for (const Case& s : shapes)
    for (const float scale : {1.0f, 1e-20f}) {
      CAPTURE(s.ta);
      CAPTURE(s.tb);
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.k);
      CAPTURE(scale);
      Rng rng(uint64_t(s.m * 31 + s.n * 17 + s.k));
      const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
      auto a = random_floats(s.m * s.k, rng), b = random_floats(s.n * s.k, rng);
      for (float& x : a) x *= scale;  // products near 1e-40: subnormal
      for (float& x : b) x *= scale;
      const auto c0 = random_floats(s.m * s.n, rng), start = random_floats(s.n, rng);
      const float* st = s.with_start ? start.data() : nullptr;
      for (int t : {1, 2}) {
        set_num_threads(t);
        std::vector<float> tiles = c0, model = c0;
        gemm_bf16(s.ta, s.tb, s.m, s.n, s.k, s.alpha, a.data(), lda, b.data(), ldb, s.beta,
                  tiles.data(), s.n, st, Bf16Tiles::amx);
        gemm_bf16(s.ta, s.tb, s.m, s.n, s.k, s.alpha, a.data(), lda, b.data(), ldb, s.beta,
                  model.data(), s.n, st, Bf16Tiles::amx_model);
        CHECK(std::memcmp(tiles.data(), model.data(), tiles.size() * sizeof(float)) == 0);
      }
    }
  set_num_threads(threads);
}

// On an AMX CPU a product of fewer than 2^18 multiply-adds (an attention head's) runs on float
// fmas and a larger one on the tiles: the default gives the bits of that kind, not of the other
// (the two sum in different orders, so random rows tell them apart).
TEST_CASE("on an AMX machine small products run on float fmas, large ones on tiles") {
  if (bf16_hardware() != Bf16Hardware::amx) {
    MESSAGE("skipped: this CPU has no AMX-BF16");
    return;
  }
  struct Size {
    int64_t m, n, k;
    Bf16Tiles expected, other;
  };
  const Size sizes[] = {{50, 32, 64, Bf16Tiles::fma, Bf16Tiles::amx},   // 102,400
                        {50, 50, 64, Bf16Tiles::fma, Bf16Tiles::amx},   // 160,000: a head of 64
                        {64, 64, 64, Bf16Tiles::amx, Bf16Tiles::fma}};  // 262,144 = 2^18
  for (const Size& s : sizes) {
    CAPTURE(s.m);
    CAPTURE(s.n);
    Rng rng(11);
    const auto a = random_floats(s.m * s.k, rng), b = random_floats(s.k * s.n, rng);
    auto product = [&](Bf16Tiles tiles) {
      std::vector<float> c(size_t(s.m * s.n));
      gemm_bf16(false, false, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, 0.0f, c.data(),
                s.n, nullptr, tiles);
      return c;
    };
    const auto best = product(Bf16Tiles::best);
    CHECK(best == product(s.expected));
    CHECK(best != product(s.other));
  }
}

// Float fmas on operands rounded to bf16 are fp32's own small products (gemm_small) of the
// rounded operands, bit for bit: the route changes what is multiplied, not how it is summed. Both
// operands transposed, op(A) is written out first: the bits of the product with A turned.
TEST_CASE("bf16 products on fmas are fp32's products of the operands rounded to bf16") {
  if (!testing::cpu_runs_bf16_fmas()) {
    MESSAGE("skipped: this CPU has no AVX2 and FMA");
    return;
  }
  Rng rng(13);
  const int64_t m = 50, n = 37, k = 300;  // past one chunk of 256 terms
  const auto a = random_floats(m * k, rng), b = random_floats(n * k, rng);
  std::vector<float> a_rounded(a.size()), b_rounded(b.size()), a_turned(a.size());
  for (size_t i = 0; i < a.size(); ++i) a_rounded[i] = from_bf16(to_bf16(a[i]));
  for (size_t i = 0; i < b.size(); ++i) b_rounded[i] = from_bf16(to_bf16(b[i]));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t l = 0; l < k; ++l) a_turned[i * k + l] = a[l * m + i];
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      CAPTURE(ta);
      CAPTURE(tb);
      const int64_t lda = ta ? m : k, ldb = tb ? k : n;
      std::vector<float> fmas(m * n, 1.0f), fp32(m * n, 1.0f);
      gemm_bf16(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, fmas.data(), n, nullptr,
                Bf16Tiles::fma);
      if (ta && tb) {
        gemm_bf16(false, true, m, n, k, 0.5f, a_turned.data(), k, b.data(), ldb, 2.0f, fp32.data(),
                  n, nullptr, Bf16Tiles::fma);
      } else {
        const MatmulPrecisionGuard fp32_mode(MatmulPrecision::fp32);
        gemm_small(ta, tb, m, n, k, 0.5f, a_rounded.data(), lda, b_rounded.data(), ldb, 2.0f,
                   fp32.data(), n);
      }
      CHECK(std::memcmp(fmas.data(), fp32.data(), fmas.size() * sizeof(float)) == 0);
    }
}

// A C larger than L2 whose rows start on 64-byte boundaries is written by the tiles with
// streaming stores (past the caches); its whole blocks, and the edge blocks stored as usual,
// keep the model's bits. 2070 x 512 floats: over 4 MB, with 22 rows at the bottom edge.
TEST_CASE("on an AMX machine a C written past the caches has the model's bits") {
  if (bf16_hardware() != Bf16Hardware::amx) {
    MESSAGE("skipped: this CPU has no AMX-BF16");
    return;
  }
  const int64_t m = 2070, n = 512, k = 40;
  Rng rng(7);
  const auto a = random_floats(m * k, rng), b = random_floats(n * k, rng);
  const auto bias = random_floats(n, rng);
  auto aligned = [](std::vector<float>& v) {  // the first 64-byte boundary in v
    return v.data() + (64 - reinterpret_cast<uintptr_t>(v.data()) % 64) % 64 / sizeof(float);
  };
  const int threads = num_threads();
  for (const bool with_bias : {false, true})
    for (int t : {1, 2}) {
      CAPTURE(with_bias);
      CAPTURE(t);
      set_num_threads(t);
      std::vector<float> tiles_store(m * n + 16, -1.0f), model(m * n, -2.0f);
      float* tiles = aligned(tiles_store);
      const float* start = with_bias ? bias.data() : nullptr;
      gemm_bf16(false, true, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, tiles, n, start,
                Bf16Tiles::amx);
      gemm_bf16(false, true, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, model.data(), n, start,
                Bf16Tiles::amx_model);
      CHECK(std::memcmp(tiles, model.data(), model.size() * sizeof(float)) == 0);
    }
  set_num_threads(threads);
}

// When each row of op(A) has one nonzero term, every element of C is one product of two bf16,
// exact in float (the zeros add nothing): so the kernel's own conversion (AVX-512, in packing)
// must give to_bf16's bits, ties, NaN and infinity included. k = 1, 40 and 77 reach both the
// vector bodies and the scalar tails of the packing.
TEST_CASE("gemm_bf16 rounds its operands exactly as to_bf16 does") {
  const float ties[] = {1.00390625f,  // 1 + 2^-8: a tie, down to even
                        1.01171875f,  // 1 + 3 * 2^-8: a tie, up to even
                        -1.00390625f, 3.0e38f, -0.0f};
  const float specials[] = {std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), 1.01171875f};
  Rng rng(11);
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t k : {1, 40, 77}) {
        CAPTURE(ta);
        CAPTURE(tb);
        CAPTURE(k);
        const int64_t m = 37, n = 41;
        const int64_t lda = ta ? m : k, ldb = tb ? k : n;
        std::vector<float> a(m * k, 0.0f);
        auto b = random_floats(n * k, rng);
        for (size_t i = 0; i < b.size(); i += 3) b[i] = ties[i / 3 % std::size(ties)];
        for (int64_t i = 0; i < m; ++i) {  // row i of op(A): one term, at column i % k
          const int64_t l = i % k;
          (ta ? a[l * lda + i] : a[i * lda + l]) =
              i % 4 == 0 ? specials[i / 4 % std::size(specials)] : float(rng.normal());
        }
        std::vector<float> got(m * n), want(m * n);
        gemm_bf16_reference(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, want.data(),
                            n);
        for (const Bf16Tiles tiles : runnable_tiles()) {
          CAPTURE(int(tiles));
          gemm_bf16(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, got.data(), n,
                    nullptr, tiles);
          int64_t differ = 0;
          for (int64_t i = 0; i < m * n; ++i)
            differ += std::isnan(want[i]) ? !std::isnan(got[i]) : got[i] != want[i];
          CHECK(differ == 0);
        }
      }
}

TEST_CASE(
    "in bf16 mode the engine's float products are gemm_bf16's; fp32 and double stay as they were") {
  const testing::Bf16ModelWhereNeeded model;  // on a CPU without bf16 units
  Rng rng(3);
  const int64_t m = 100, n = 40, k = 64;
  const auto a = random_floats(m * k, rng), b = random_floats(n * k, rng),
             bias = random_floats(n, rng);
  std::vector<float> fp32(m * n), bf16(m * n), direct(m * n), small(m * n);
  gemm_bias(m, n, k, a.data(), b.data(), bias.data(), fp32.data());
  gemm_bf16(false, true, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, direct.data(), n,
            bias.data());
  std::vector<double> ad(a.begin(), a.end()), bd(b.begin(), b.end()), want(m * n), dmode(m * n);
  gemm(false, true, m, n, k, 1.0, ad.data(), k, bd.data(), k, 0.0, want.data(), n);
  {
    MatmulPrecisionGuard amp(MatmulPrecision::bf16);
    CHECK(matmul_precision() == MatmulPrecision::bf16);
    gemm_bias(m, n, k, a.data(), b.data(), bias.data(), bf16.data());
    gemm_small(false, true, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, small.data(), n);
    gemm(false, true, m, n, k, 1.0, ad.data(), k, bd.data(), k, 0.0, dmode.data(), n);
  }
  CHECK(matmul_precision() == MatmulPrecision::fp32);
  CHECK(bf16 == direct);
  CHECK(dmode == want);  // double products never round to bf16
  std::vector<float> again(m * n);
  gemm_bias(m, n, k, a.data(), b.data(), bias.data(), again.data());
  CHECK(again == fp32);  // fp32 after the guard: the same bits as before it
  std::vector<float> plain(m * n);
  gemm_bf16(false, true, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, plain.data(), n);
  CHECK(small == plain);
  int differ = 0;  // and bf16 is really another product
  for (int64_t i = 0; i < m * n; ++i) differ += bf16[i] != fp32[i];
  CHECK(differ > m * n / 2);
}

// The loops that need bf16 units are one clear error on a CPU without them, and leave C as it
// was; the plain model of the AMX tiles runs on any CPU.
TEST_CASE("gemm_bf16 on loops the CPU lacks is one clear error; the AMX model runs anywhere") {
  const std::vector<float> a(6 * 4, 1.0f), b(4 * 5, 2.0f);
  std::vector<float> c(6 * 5, -1.0f);
  auto run = [&](Bf16Tiles tiles) {
    gemm_bf16(false, false, 6, 5, 4, 1.0f, a.data(), 4, b.data(), 5, 0.0f, c.data(), 5, nullptr,
              tiles);
  };
  if (!have_bf16()) {
    for (const Bf16Tiles tiles : {Bf16Tiles::best, Bf16Tiles::avx512_bf16})
      CHECK_THROWS_WITH_AS(run(tiles), "gemm_bf16: this CPU has no AVX512-BF16 (product 6x5x4)",
                           Error);
    CHECK(c == std::vector<float>(6 * 5, -1.0f));
  }
  if (bf16_hardware() != Bf16Hardware::amx)
    CHECK_THROWS_WITH_AS(run(Bf16Tiles::amx),
                         have_bf16() ? "gemm_bf16: AMX tiles asked for on a CPU without them"
                                     : "gemm_bf16: this CPU has no AVX512-BF16 (product 6x5x4)",
                         Error);
  run(Bf16Tiles::amx_model);
  CHECK(c == std::vector<float>(6 * 5, 8.0f));  // 4 terms of 1 x 2, exact in bf16 and float
  if (have_bf16()) return;
  // For the tests of the ops in bf16 mode, the model can stand in for the units, and only then.
  use_bf16_stand_in(Bf16StandIn::model);
  set_matmul_precision(MatmulPrecision::bf16);
  std::fill(c.begin(), c.end(), -1.0f);
  run(Bf16Tiles::best);
  CHECK(c == std::vector<float>(6 * 5, 8.0f));
  set_matmul_precision(MatmulPrecision::fp32);
  use_bf16_stand_in(Bf16StandIn::none);
  CHECK_THROWS_AS(set_matmul_precision(MatmulPrecision::bf16), Error);
  CHECK_THROWS_AS(run(Bf16Tiles::best), Error);
}

TEST_CASE("a precision is fp32, bf16 or auto; anything else is one clear error") {
  CHECK(parse_matmul_precision("bf16", "--amp") == MatmulPrecision::bf16);
  CHECK(parse_matmul_precision("fp32", "--amp") == MatmulPrecision::fp32);
  CHECK(parse_matmul_precision("auto", "--amp") == best_matmul_precision());
  CHECK_THROWS_WITH_AS(parse_matmul_precision("fp16", "--amp"),
                       "--amp: 'fp16' is not a precision; expected fp32, bf16 or auto", Error);
  if (!have_bf16()) CHECK_THROWS_AS(set_matmul_precision(MatmulPrecision::bf16), Error);
  CHECK(matmul_precision() == MatmulPrecision::fp32);
}
