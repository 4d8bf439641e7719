// vitgrad's own float tiles (engine/kernels/gemm_simd.h) promise the bits of a plain loop: each
// element of C is one fma chain per chunk of 256 terms of k, started from the bias or zero,
// the chunks added to C in order. These tests hold every kind of tiles the CPU has to that
// loop, bit for bit, so AVX-512 and AVX2 machines give the same products, on the shapes of a
// linear layer (forward, input and weight gradients) and of an attention head.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "engine/core/rng.h"
#include "engine/kernels/blas.h"
#include "tests/engine/bits_helpers.h"
#include "tests/engine/float_tiles_helpers.h"

using namespace vg;
using vg::testing::random_floats;

namespace {

constexpr int64_t kChunk = 256;

// One element as the tiles make it, from op(A)'s row and op(B)'s column given as functions of
// p: alpha times each chunk's chain; the first chunk's chain starts from `start` and is added
// to beta * c0 by one fma (not at all when beta is 0), the later ones to the sum so far.
float chained(int64_t k, const std::function<float(int64_t)>& a,
              const std::function<float(int64_t)>& b, float alpha, float beta, float c0,
              float start) {
  float c = 0;
  for (int64_t p0 = 0; p0 < k; p0 += kChunk) {
    float chain = p0 == 0 ? start : 0.0f;
    for (int64_t p = p0; p < std::min(k, p0 + kChunk); ++p) chain = std::fma(a(p), b(p), chain);
    const float scaled = alpha == 1.0f ? chain : alpha * chain;
    if (p0 > 0)
      c = scaled + c;
    else
      c = beta == 0.0f ? scaled : beta == 1.0f ? scaled + c0 : std::fma(beta, c0, scaled);
  }
  return c;
}

struct Product {
  bool ta, tb;
  int64_t m, n, k;
  float alpha, beta;
};

// C of `product` as the plain loop makes it (row-major, contiguous operands).
std::vector<float> plain(const Product& s, const std::vector<float>& a, const std::vector<float>& b,
                         const std::vector<float>& c0, const float* start) {
  std::vector<float> c(s.m * s.n);
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j)
      c[i * s.n + j] = chained(
          s.k, [&](int64_t p) { return s.ta ? a[p * s.m + i] : a[i * s.k + p]; },
          [&](int64_t p) { return s.tb ? b[j * s.k + p] : b[p * s.n + j]; }, s.alpha, s.beta,
          c0[i * s.n + j], start ? start[j] : 0.0f);
  return c;
}

int64_t mismatches(const std::vector<float>& got, const std::vector<float>& want) {
  int64_t count = 0;
  for (size_t i = 0; i < got.size(); ++i) count += got[i] != want[i];
  return count;
}

}  // namespace

TEST_CASE("the float tiles give a plain fma loop's bits: linear forward, input and weight grads") {
  testing::for_each_float_tiles([](detail::FloatTiles tiles) {
    if (tiles == detail::FloatTiles::none) return;  // OpenBLAS sums in its own order
    // (6400 x 192 x 64 shrunk): forward with a bias, k in one and in three chunks; an input
    // gradient dY W; weight gradients dY^T X, with B wider than A (C^T made) and narrower,
    // C's rows shared among the threads and its panels (AVX-512's tiles: an odd count of row
    // tiles; AVX2's: an even count of panels), and, with AVX-512's, C's rows shared over two or
    // more panels, where A's columns are turned into rows (its last chunk of k 88 terms long,
    // not a whole number of the transposes' blocks), made directly and as C^T.
    for (const Product s :
         {Product{false, true, 70, 37, 64, 1, 0}, Product{false, true, 130, 40, 600, 1, 0},
          Product{false, false, 99, 64, 300, 2, 0.5f}, Product{true, false, 64, 256, 700, 1, 0},
          Product{true, false, 70, 64, 600, 1, 0}, Product{true, false, 17, 130, 256, 1, 0},
          Product{true, false, 138, 128, 600, 1, 0}, Product{true, false, 64, 256, 300, 2, 0.5f},
          Product{true, false, 96, 192, 600, 1, 0}, Product{true, false, 96, 192, 600, 1, 0.5f}}) {
      CAPTURE(s.ta);
      CAPTURE(s.tb);
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.k);
      Rng rng(11);
      const auto a = random_floats(s.m * s.k, rng), b = random_floats(s.k * s.n, rng);
      const auto c0 = random_floats(s.m * s.n, rng), bias = random_floats(s.n, rng);
      std::vector<float> got = c0;
      if (s.tb) {  // a linear forward: the bias as the start of every chain
        gemm_bias(s.m, s.n, s.k, a.data(), b.data(), bias.data(), got.data());
        CHECK(mismatches(got, plain(s, a, b, c0, bias.data())) == 0);
      } else {
        gemm(s.ta, false, s.m, s.n, s.k, s.alpha, a.data(), s.ta ? s.m : s.k, b.data(), s.n, s.beta,
             got.data(), s.n);
        CHECK(mismatches(got, plain(s, a, b, c0, nullptr)) == 0);
      }
    }
  });
}

TEST_CASE("the float tiles give a plain fma loop's bits: an attention head's products") {
  testing::for_each_float_tiles([](detail::FloatTiles tiles) {
    if (tiles == detail::FloatTiles::none) return;
    // Q K^T (50 x 50 x 16), P V (50 x 16 x 50), dP^T Q (A transposed), one vector across (n = 4).
    for (const Product s :
         {Product{false, true, 50, 50, 16, 0.25f, 0}, Product{false, false, 50, 16, 50, 1, 0},
          Product{true, false, 50, 16, 50, 1, 1}, Product{false, true, 13, 4, 300, 1, 0.5f}}) {
      CAPTURE(s.ta);
      CAPTURE(s.tb);
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.k);
      Rng rng(12);
      const auto a = random_floats(s.m * s.k, rng), b = random_floats(s.k * s.n, rng);
      const auto c0 = random_floats(s.m * s.n, rng);
      std::vector<float> got = c0;
      gemm_small(s.ta, s.tb, s.m, s.n, s.k, s.alpha, a.data(), s.ta ? s.m : s.k, b.data(),
                 s.tb ? s.k : s.n, s.beta, got.data(), s.n);
      CHECK(mismatches(got, plain(s, a, b, c0, nullptr)) == 0);
    }
  });
}

TEST_CASE("the float tiles give a plain fma loop's bits: a large product beyond a linear's k") {
  testing::for_each_float_tiles([](detail::FloatTiles tiles) {
    if (tiles == detail::FloatTiles::none) return;
    // k above 768: op(B) packed and swept in groups of panels (one to five panels a group,
    // with B read in place and transposed), several groups, the last one partly filled.
    for (const Product s : {Product{false, false, 64, 200, 1600, 1, 0.5f},
                            Product{false, true, 70, 100, 1300, 2, 0}}) {
      CAPTURE(s.tb);
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.k);
      Rng rng(13);
      const auto a = random_floats(s.m * s.k, rng), b = random_floats(s.k * s.n, rng);
      const auto c0 = random_floats(s.m * s.n, rng);
      std::vector<float> got = c0;
      gemm(false, s.tb, s.m, s.n, s.k, s.alpha, a.data(), s.k, b.data(), s.tb ? s.k : s.n, s.beta,
           got.data(), s.n);
      CHECK(mismatches(got, plain(s, a, b, c0, nullptr)) == 0);
    }
  });
}

TEST_CASE("the float tiles give a plain fma loop's bits: a narrow C with B transposed, strided") {
  testing::for_each_float_tiles([](detail::FloatTiles tiles) {
    if (tiles == detail::FloatTiles::none) return;
    // An attention head's S = s Q K^T and dP = dO V^T read out of a packed qkv: C at most seven
    // vectors wide (AVX2 takes each pair of its rows across the whole width), an odd count of
    // rows, a last vector of 1 to 8 columns, k short of one transposed block and a whole chunk;
    // and the shapes just past that route (57 columns, 257 terms, beta not 0).
    for (const Product s :
         {Product{false, true, 51, 50, 16, 0.25f, 0}, Product{false, true, 2, 56, 64, 1, 0},
          Product{false, true, 1, 1, 3, 1, 0}, Product{false, true, 9, 8, 256, 1, 0},
          Product{false, true, 33, 41, 32, 0.125f, 0}, Product{false, true, 7, 57, 16, 0.5f, 0},
          Product{false, true, 5, 20, 257, 1, 0}, Product{false, true, 6, 50, 16, 1, 0.5f}}) {
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.k);
      CAPTURE(s.beta);
      Rng rng(14);
      // Each operand's rows lie further apart than they are long, as a head's do in qkv.
      const int64_t lda = s.k + 5, ldb = s.k + 3, ldc = s.n + 2;
      const auto a_wide = random_floats(s.m * lda, rng), b_wide = random_floats(s.n * ldb, rng);
      const auto c_wide = random_floats(s.m * ldc, rng);
      std::vector<float> a(s.m * s.k), b(s.n * s.k), c0(s.m * s.n);
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t p = 0; p < s.k; ++p) a[i * s.k + p] = a_wide[i * lda + p];
      for (int64_t j = 0; j < s.n; ++j)
        for (int64_t p = 0; p < s.k; ++p) b[j * s.k + p] = b_wide[j * ldb + p];
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; ++j) c0[i * s.n + j] = c_wide[i * ldc + j];
      std::vector<float> got = c_wide;
      gemm_small(false, true, s.m, s.n, s.k, s.alpha, a_wide.data(), lda, b_wide.data(), ldb,
                 s.beta, got.data(), ldc);
      const auto want = plain(s, a, b, c0, nullptr);
      int64_t wrong = 0, touched = 0;
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          const float g = got[i * ldc + j];
          if (j < s.n)
            wrong += g != want[i * s.n + j];
          else
            touched += g != c_wide[i * ldc + j];
        }
      CHECK(wrong == 0);
      CHECK(touched == 0);  // the columns between C's rows are not C's
    }
  });
}
