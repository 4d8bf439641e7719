#include "engine/blas.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "engine/parallel.h"
#include "engine/rng.h"

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
void check_products(int64_t m, int64_t n, int64_t k, double tolerance) {
  Rng rng(5);
  const int threads = num_threads();
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (T beta : {T(0), T(0.5)}) {
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
          gemm(ta, tb, m, n, k, T(2), a.data(), ta ? m : k, b.data(), tb ? k : n, beta, c.data(),
               n);
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
