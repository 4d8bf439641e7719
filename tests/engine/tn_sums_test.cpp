// A weight gradient with its bias gradient in one pass over dY (engine/kernels/blas.h
// gemm_tn_sums): the product's bits and the `sum` op's, in every precision, for every kind
// of bf16 tiles and on one and two threads.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "engine/core/parallel.h"
#include "engine/core/rng.h"
#include "engine/kernels/axis_sums.h"
#include "engine/kernels/bf16.h"
#include "engine/kernels/bf16_gemm.h"
#include "engine/kernels/blas.h"
#include "engine/kernels/matmul_precision.h"
#include "engine/ops/ops.h"
#include "tests/engine/bf16_tiles_helpers.h"
#include "tests/engine/bits_helpers.h"
#include "tests/engine/gradcheck_helpers.h"

using namespace vg;
using vg::testing::same_bits;

namespace {

struct Shape3 {
  int64_t m, n, k;  // C (m x n) = A^T B, A (k x m): dW for m outputs, n inputs, k tokens
};

// C split by rows (m >= n) and by columns, k across several 1024-row sum chunks and not a
// multiple of the 512 terms a bf16 chunk packs, k odd, k shorter than one chunk, m = 1 (the
// `sum` op's row path), an empty k, and k a multiple of 32 but not of 512. In fp32 the first
// five take the engine's tiles; on two threads with AVX-512's: by row tiles, computing C^T by
// row tiles, by row tiles over two panels, and, where the row tiles are odd in count, by panels
// and C^T by panels (AVX2's narrower panels split by panels more often). A kept X is read where
// it lies by the AMX tiles (and their model) where its rows of words are a multiple of 32 wide:
// in every chunk at k = 1056 and k = 1024, in all but a last one, packed, at 2600, 1300, 2000.
// In fp32 with AVX-512's tiles the last two have C's rows shared over two panels, dY's columns
// turned into rows: as A (192 x 128) and as B (96 x 192, C^T made).
const Shape3 kShapes[] = {{40, 24, 2600},   {24, 100, 3071}, {96, 96, 1024}, {138, 128, 1300},
                          {128, 207, 1300}, {37, 5, 300},    {1, 30, 2000},  {7, 9, 0},
                          {64, 64, 1056},   {192, 128, 600}, {96, 192, 600}};

// A (k x m) whose columns each hold +2^60 and, further down, -2^60 among values of 2^-8 .. 2^8:
// while a sum holds 2^60 its small terms are rounded to its ulp, so a double sum taken in another
// order, or in other chunks, gives another float. (Sums of ordinary floats are exact in double
// whatever the order, and would hide that.)
std::vector<float> columns_to_sum(int64_t k, int64_t m, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(k * m));
  for (float& e : v) e = float(std::ldexp(rng.normal(), int(rng.below(17)) - 8));
  for (int64_t i = 0; i < m && k >= 2; ++i) {
    v[rng.below(uint64_t(k / 2)) * m + i] = 0x1p60f;
    v[(k / 2 + rng.below(uint64_t(k - k / 2))) * m + i] = -0x1p60f;
  }
  return v;
}

// The column sums of A (k x m) as the `sum` op takes them.
std::vector<float> sum_op_columns(const std::vector<float>& a, const Shape3& s) {
  Tensor t = Tensor::empty({s.k, s.m});
  std::copy(a.begin(), a.end(), t.data<float>());
  const Tensor col = sum(t, {0});
  return std::vector<float>(col.data<float>(), col.data<float>() + s.m);
}

// Every kind of bf16 tiles this CPU can run (the plain model of the AMX tiles on any CPU).
std::vector<Bf16Tiles> runnable_tiles() {
  return testing::bf16_tiles_here();
}

}  // namespace

TEST_CASE("a bf16 weight gradient with its column sums has the product's and sum's bits") {
  const std::vector<Bf16Tiles> kinds = runnable_tiles();
  const int threads = num_threads();
  for (const Shape3 s : kShapes) {
    const std::vector<float> a = columns_to_sum(s.k, s.m, 1), b = columns_to_sum(s.k, s.n, 2);
    const std::vector<float> want_sums = sum_op_columns(a, s);
    for (const Bf16Tiles tiles : kinds)
      for (int t : {1, 2}) {
        INFO("m ", s.m, " n ", s.n, " k ", s.k, ", tiles ", int(tiles), ", threads ", t);
        set_num_threads(t);
        std::vector<float> want(s.m * s.n, -1.0f), c(s.m * s.n, -2.0f), sums(s.m, -3.0f);
        gemm_bf16(true, false, s.m, s.n, s.k, 1.0f, a.data(), s.m, b.data(), s.n, 0.0f, want.data(),
                  s.n, nullptr, tiles);
        gemm_bf16_tn_sums(s.m, s.n, s.k, a.data(), b.data(), c.data(), sums.data(), tiles);
        CHECK(same_bits(c, want));
        CHECK(same_bits(sums, want_sums));
      }
  }
  set_num_threads(threads);
}

// A linear's forward keeps its input X (k x n) as the product rounded it; its weight gradient
// dY^T X then reads those words instead of the floats: the same bits, for every kind of tiles.
TEST_CASE("a bf16 input kept by the forward gives its weight gradient the floats' bits") {
  const std::vector<Bf16Tiles> kinds = runnable_tiles();
  const int threads = num_threads();
  Rng rng(4);
  for (const Shape3 s : kShapes) {
    const std::vector<float> dy = columns_to_sum(s.k, s.m, 1), x = columns_to_sum(s.k, s.n, 2);
    const int64_t out = 20;  // the forward: Y (k x out) = X W^T + bias
    std::vector<float> w(static_cast<size_t>(out * s.n)), bias(static_cast<size_t>(out));
    for (float& e : w) e = float(rng.normal());
    for (float& e : bias) e = float(rng.normal());
    for (const Bf16Tiles tiles : kinds)
      for (int t : {1, 2}) {
        INFO("m ", s.m, " n ", s.n, " k ", s.k, ", tiles ", int(tiles), ", threads ", t);
        set_num_threads(t);
        std::vector<float> y(s.k * out, -1.0f), y_kept(s.k * out, -2.0f);
        gemm_bf16(false, true, s.k, out, s.n, 1.0f, x.data(), s.n, w.data(), s.n, 0.0f, y.data(),
                  out, bias.data(), tiles);
        Bf16Rows kept;
        gemm_bf16_keeping_a(s.k, out, s.n, x.data(), w.data(), bias.data(), y_kept.data(), kept,
                            tiles);
        CHECK(same_bits(y_kept, y));
        // By pairs of rows, each row of words cols rounded up to 16 long, the words past zero.
        REQUIRE((kept.rows == s.k && kept.cols == s.n && kept.row_pairs));
        REQUIRE(kept.ld() == (s.n + 15) / 16 * 16);
        int64_t wrong_words = 0;
        for (int64_t p = 0; 2 * p < s.k; ++p)
          for (int64_t j = 0; j < kept.ld(); ++j) {
            const float first = j < s.n ? x[2 * p * s.n + j] : 0.0f;
            const float second = j < s.n && 2 * p + 1 < s.k ? x[(2 * p + 1) * s.n + j] : 0.0f;
            wrong_words += kept.words()[p * kept.ld() + j] != bf16_pair(first, second);
          }
        CHECK(wrong_words == 0);
        std::vector<float> want(s.m * s.n, -3.0f), c(s.m * s.n, -4.0f);
        std::vector<float> want_sums(s.m, -5.0f), sums(s.m, -6.0f);
        gemm_bf16_tn_sums(s.m, s.n, s.k, dy.data(), x.data(), want.data(), want_sums.data(), tiles);
        gemm_bf16_tn_sums(s.m, dy.data(), kept, c.data(), sums.data(), tiles);
        CHECK(same_bits(c, want));
        CHECK(same_bits(sums, want_sums));
      }
  }
  set_num_threads(threads);
}

TEST_CASE("gemm_tn_sums gives gemm's product and sum's column sums in fp32, bf16 and double") {
  const int threads = num_threads();
  for (const MatmulPrecision precision : {MatmulPrecision::fp32, MatmulPrecision::bf16}) {
    const testing::Bf16ModelWhereNeeded model;  // bf16 on a CPU without bf16 units too
    const MatmulPrecisionGuard mode(precision);
    for (const Shape3 s : kShapes)
      for (int t : {1, 2}) {
        INFO("bf16 ", precision == MatmulPrecision::bf16, ", m ", s.m, " n ", s.n, " k ", s.k,
             ", threads ", t);
        set_num_threads(t);
        const std::vector<float> a = columns_to_sum(s.k, s.m, 3), b = columns_to_sum(s.k, s.n, 4);
        std::vector<float> want(s.m * s.n, -1.0f), c(s.m * s.n, -2.0f), sums(s.m, -3.0f);
        gemm(true, false, s.m, s.n, s.k, 1.0f, a.data(), s.m, b.data(), s.n, 0.0f, want.data(),
             s.n);
        gemm_tn_sums(s.m, s.n, s.k, a.data(), b.data(), c.data(), sums.data());
        CHECK(same_bits(c, want));
        CHECK(same_bits(sums, sum_op_columns(a, s)));
      }
  }
  set_num_threads(threads);
  // Double: the product against plain loops, the sums against the sum op.
  const Shape3 s{5, 3, 1500};
  std::vector<double> a(s.k * s.m), b(s.k * s.n), c(s.m * s.n), sums(s.m);
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.37 * double(i));
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.11 * double(i));
  gemm_tn_sums(s.m, s.n, s.k, a.data(), b.data(), c.data(), sums.data());
  for (int64_t i = 0; i < s.m; ++i) {
    double col = 0.0;
    for (int64_t l = 0; l < s.k; ++l) col += a[l * s.m + i];
    CHECK(sums[i] == doctest::Approx(col).epsilon(1e-13));
    for (int64_t j = 0; j < s.n; ++j) {
      double dot = 0.0;
      for (int64_t l = 0; l < s.k; ++l) dot += a[l * s.m + i] * b[l * s.n + j];
      CHECK(c[i * s.n + j] == doctest::Approx(dot).epsilon(1e-12));
    }
  }
}

TEST_CASE("a linear's bias gradient is sum(dy) bit for bit, with or without its weight's") {
  // linear and the fused linears take db with dW in one pass; where only the bias learns,
  // from the sum op. Both must be the sum op's bits.
  const int threads = num_threads();
  for (const MatmulPrecision precision : {MatmulPrecision::fp32, MatmulPrecision::bf16}) {
    const testing::Bf16ModelWhereNeeded model;  // bf16 on a CPU without bf16 units too
    const MatmulPrecisionGuard mode(precision);
    for (const int64_t out : {int64_t{1}, int64_t{40}})
      for (const bool weight_learns : {true, false})
        for (int t : {1, 2}) {
          INFO("bf16 ", precision == MatmulPrecision::bf16, ", out ", out, ", weight learns ",
               weight_learns, ", threads ", t);
          set_num_threads(t);
          Tensor x = testing::variable({3, 700, 24}, 5).detach().to(DType::f32);
          Tensor w = testing::variable({out, 24}, 6).detach().to(DType::f32);
          Tensor bias = testing::variable({out}, 7).detach().to(DType::f32);
          Tensor s = testing::variable({out}, 8).detach().to(DType::f32);
          Tensor dy = testing::variable({3, 700, out}, 9).detach().to(DType::f32);
          w.set_requires_grad(weight_learns);
          bias.set_requires_grad();
          s.set_requires_grad();
          linear(x, w, bias).backward(dy);
          const Tensor want = sum(dy.reshape({2100, out}), {0});
          CHECK(bias.grad().to_vector() == want.to_vector());
          bias.zero_grad();
          scaled_linear(x, w, bias, s).backward(dy);  // db = s * sum(dy)
          CHECK(bias.grad().to_vector() == mul(want, s.detach()).to_vector());
        }
  }
  set_num_threads(threads);
}
