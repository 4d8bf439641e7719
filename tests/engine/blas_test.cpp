#include "engine/kernels/blas.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/core/parallel.h"
#include "engine/core/rng.h"
#include "tests/engine/float_tiles_helpers.h"

using namespace vg;

namespace {

// C = alpha op(A) op(B) + beta C0 in long double, one element at a time: the reference.
template <class T>
std::vector<T> reference_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha,
                              const std::vector<T>& a, const std::vector<T>& b, T beta,
                              const std::vector<T>& c0) {
  std::vector<T> c(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      long double s = 0;
      for (int64_t l = 0; l < k; ++l)
        s += (long double)(ta ? a[l * m + i] : a[i * k + l]) * (tb ? b[j * k + l] : b[l * n + j]);
      c[i * n + j] = T(alpha * s + (long double)beta * c0[i * n + j]);
    }
  return c;
}

template <class T>
std::vector<T> random_vector(int64_t n, Rng& rng) {
  std::vector<T> v(n);
  for (T& e : v) e = T(rng.normal());
  return v;
}

// Every trans combination of a product of shape (m, n, k), with alpha and beta; the largest
// error relative to the size of the terms, and whether 1 and 2 threads gave the same bits.
template <class T>
void check_products(int64_t m, int64_t n, int64_t k, double tolerance, bool small = false) {
  Rng rng(5);
  const int threads = num_threads();
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (T beta : {T(0), T(0.5), T(1)}) {
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(k);
        CAPTURE(ta);
        CAPTURE(tb);
        CAPTURE(beta);
        const auto a = random_vector<T>(m * k, rng), b = random_vector<T>(k * n, rng);
        const auto c0 = random_vector<T>(m * n, rng);
        const auto want = reference_gemm<T>(ta, tb, m, n, k, T(2), a, b, beta, c0);
        std::vector<std::vector<T>> got;
        for (int t : {1, 2}) {
          set_num_threads(t);
          std::vector<T> c = c0;
          const int64_t lda = ta ? m : k, ldb = tb ? k : n;
          if (small)
            gemm_small(ta, tb, m, n, k, T(2), a.data(), lda, b.data(), ldb, beta, c.data(), n);
          else
            gemm(ta, tb, m, n, k, T(2), a.data(), lda, b.data(), ldb, beta, c.data(), n);
          got.push_back(c);
        }
        set_num_threads(threads);
        double worst = 0;
        for (int64_t i = 0; i < m * n; ++i)
          worst =
              std::max(worst, std::abs(double(got[0][i]) - double(want[i])) / std::sqrt(double(k)));
        CHECK(worst < tolerance);
        CHECK(got[0] == got[1]);
      }
}

}  // namespace

TEST_CASE("gemm: deep products (k far above m and n, cut along k) match a long-double reference") {
  check_products<float>(24, 40, 3000, 1e-5);  // a weight gradient's shape: split along k
  check_products<float>(7, 5, 997, 1e-5);     // odd sizes: uneven k blocks
  check_products<double>(24, 40, 3000, 1e-13);
}

TEST_CASE("gemm: wide products (cut into blocks of rows or columns) match the reference") {
  check_products<float>(300, 70, 50, 1e-5);
  check_products<float>(33, 500, 40, 1e-5);
  check_products<double>(300, 70, 50, 1e-13);
}

// Float products with many rows and a short k take vitgrad's own tiles (engine/kernels/gemm_simd.h)
// where the CPU has them, here each kind in turn: 6 rows by 64 columns (AVX-512) or by 16
// (AVX2), so these cover a remainder of 1 to 5 rows, a partly filled last column vector, one
// to four vectors across, several panels, k at the kernel's lower bound (8) and just under it
// (7: cut into blocks, each on the small-product loops, engine/kernels/blas.cpp), and k at a
// linear layer's bound (768) and above it (769: op(B) packed in groups of panels).
TEST_CASE("gemm: many rows and a short k, at every edge of the kernel's tiles") {
  testing::for_each_float_tiles([](detail::FloatTiles) {
    check_products<float>(64, 16, 8, 1e-5);
    check_products<float>(65, 17, 7, 1e-5);
    check_products<float>(67, 33, 50, 1e-5);
    check_products<float>(68, 49, 64, 1e-5);
    check_products<float>(69, 63, 9, 1e-5);
    check_products<float>(70, 64, 768, 1e-5);
    check_products<float>(71, 130, 769, 1e-5);
    check_products<float>(400, 200, 64, 1e-5);  // several row blocks and threads
    // A transposed, k long (a weight gradient): k in chunks of 256, the last one short.
    check_products<float>(16, 16, 256, 1e-5);
    check_products<float>(15, 16, 256, 1e-5);  // too few rows: blocks of k, small products
    check_products<float>(31, 70, 700, 1e-5);
  });
}

// gemm_small takes one attention head's products whole: (T, T, D), (T, D, T) and their
// transposes. Its tiles read B in place or transpose it in blocks of 16 x 16 (AVX-512) or
// 8 x 8 (AVX2), so these cover a single row, partial blocks in both directions (17, 33, 50,
// 65), one vector across (tiles of up to 12 rows: d = 4, and 16 on AVX-512), several panels,
// and k in chunks of 256 (300).
TEST_CASE("gemm_small: one attention head's products at any size") {
  testing::for_each_float_tiles([](detail::FloatTiles) {
    for (int64_t t : {1, 17, 50, 65})
      for (int64_t d : {4, 16, 32, 64}) {
        check_products<float>(t, t, d, 1e-5, true);
        check_products<float>(t, d, t, 1e-5, true);
      }
    check_products<float>(33, 130, 20, 1e-5, true);
    check_products<float>(13, 15, 300, 1e-5, true);
    check_products<float>(40, 70, 300, 1e-5, true);
  });
  check_products<double>(17, 32, 50, 1e-13, true);
}

// A linear layer's forward: C = A B^T + bias in every row, with and without a bias, on the
// kernel's shapes and on others (few rows, in blocks; k = 0, where C is the bias alone).
TEST_CASE("gemm_bias: a linear forward matches the reference at any thread count") {
  struct Shape3 {
    int64_t m, n, k;
  };
  testing::for_each_float_tiles([](detail::FloatTiles) {
    for (const Shape3 s :
         {Shape3{70, 33, 50}, Shape3{400, 200, 64}, Shape3{5, 3, 4}, Shape3{66, 20, 0}})
      for (bool with_bias : {true, false}) {
        CAPTURE(s.m);
        CAPTURE(s.n);
        CAPTURE(s.k);
        CAPTURE(with_bias);
        Rng rng(9);
        const auto a = random_vector<float>(s.m * s.k, rng),
                   b = random_vector<float>(s.n * s.k, rng);
        const auto bias = random_vector<float>(s.n, rng);
        std::vector<float> ones(s.m * s.n);
        for (int64_t i = 0; i < s.m; ++i)
          for (int64_t j = 0; j < s.n; ++j) ones[i * s.n + j] = with_bias ? bias[j] : 0.0f;
        const auto want = reference_gemm<float>(false, true, s.m, s.n, s.k, 1.0f, a, b, 1.0f, ones);
        std::vector<std::vector<float>> got;
        const int threads = num_threads();
        for (int t : {1, 2}) {
          set_num_threads(t);
          std::vector<float> c(s.m * s.n, std::nanf(""));  // every element must be written
          gemm_bias(s.m, s.n, s.k, a.data(), b.data(), with_bias ? bias.data() : nullptr, c.data());
          got.push_back(c);
        }
        set_num_threads(threads);
        double worst = 0;
        for (int64_t i = 0; i < s.m * s.n; ++i) {
          const double err = std::abs(double(got[0][i]) - double(want[i]));
          worst = std::max(worst, std::isnan(err) ? INFINITY : err);  // an unwritten NaN fails
        }
        CHECK(worst < 1e-5 * std::sqrt(double(std::max<int64_t>(s.k, 1))) * 4);
        CHECK(got[0] == got[1]);
      }
  });
}
