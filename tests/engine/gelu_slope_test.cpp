#include "engine/kernels/gelu_slope.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/core/rng.h"
#include "engine/kernels/bf16.h"
#include "engine/kernels/gelu_math.h"
#include "engine/kernels/vec_math.h"

using namespace vg;

// The reference is gelu_math's per-element value and derivative, which the gelu op uses.
TEST_CASE("gelu_with_slope has the bits of gelu_math's value and derivative, both forms") {
  const int64_t n = 40000;  // more than one thread's share
  Rng rng(1);
  std::vector<float> h(n);
  for (float& v : h) v = float(3 * rng.normal());
  for (bool tanh_form : {false, true}) {
    INFO("tanh form: ", tanh_form);
    std::vector<float> a(n), slope(n);
    kernels::gelu_with_slope(h.data(), a.data(), slope.data(), n, tanh_form);
    int64_t value_mismatches = 0, slope_mismatches = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float va = tanh_form ? gelu_math::tanh_value(h[i]) : gelu_math::erf_value(h[i]);
      const float vs =
          tanh_form ? gelu_math::tanh_derivative(h[i]) : gelu_math::erf_derivative(h[i]);
      value_mismatches += a[i] != va;
      slope_mismatches += slope[i] != vs;
    }
    CHECK(value_mismatches == 0);
    CHECK(slope_mismatches == 0);
  }
}

TEST_CASE("multiply_by_slope multiplies a gradient by the slope in place") {
  std::vector<double> d{1, -2, 3}, slope{0.5, 0.25, 0};
  kernels::multiply_by_slope(d.data(), slope.data(), 3);
  CHECK(d == std::vector<double>{0.5, -0.5, 0});
}

TEST_CASE("gelu_with_grad has the bits of gelu_with_slope then multiply_by_slope, both forms") {
  const int64_t n = 40000;  // more than one thread's share
  Rng rng(2);
  std::vector<float> h(n), d(n);
  for (float& v : h) v = float(3 * rng.normal());
  for (float& v : d) v = float(rng.normal());
  for (bool tanh_form : {false, true}) {
    INFO("tanh form: ", tanh_form);
    std::vector<float> a_apart(n), slope(n), d_apart = d, a_fused(n), d_fused = d;
    kernels::gelu_with_slope(h.data(), a_apart.data(), slope.data(), n, tanh_form);
    kernels::multiply_by_slope(d_apart.data(), slope.data(), n);
    kernels::gelu_with_grad(h.data(), a_fused.data(), d_fused.data(), n, tanh_form);
    CHECK(a_fused == a_apart);
    CHECK(d_fused == d_apart);
  }
}

TEST_CASE("gelu_block has the bits of gelu_with_slope, with and without the slope, both forms") {
  const int64_t n = 3000;
  Rng rng(5);
  std::vector<float> h(n);
  for (float& v : h) v = float(3 * rng.normal());
  for (bool tanh_form : {false, true}) {
    INFO("tanh form: ", tanh_form);
    std::vector<float> a(n), slope(n), a_block(n), slope_block(n), a_alone(n);
    kernels::gelu_with_slope(h.data(), a.data(), slope.data(), n, tanh_form);
    kernels::gelu_block(h.data(), a_block.data(), slope_block.data(), n, tanh_form);
    kernels::gelu_block<float>(h.data(), a_alone.data(), nullptr, n, tanh_form);
    CHECK(a_block == a);
    CHECK(slope_block == slope);
    CHECK(a_alone == a);
  }
}

TEST_CASE("gelu_with_grad_rows has gelu_with_grad's bits, da's rows read from a block apart") {
  // Rows [r0, r1) of a block handed over as a product would: da's rows from a buffer of their
  // own, dh and a written at the block's place in the whole; the rows around it left alone.
  Rng rng(7);
  const int64_t rows = 50, cols = 97, r0 = 12, r1 = 30, n = rows * cols;
  std::vector<float> h(n), d(n);
  for (float& v : h) v = float(3 * rng.normal());
  for (float& v : d) v = float(rng.normal());
  for (bool tanh_form : {false, true}) {
    INFO("tanh form: ", tanh_form);
    std::vector<float> a(n), d_whole = d;
    kernels::gelu_with_grad(h.data(), a.data(), d_whole.data(), n, tanh_form);
    const std::vector<float> block(d.begin() + r0 * cols, d.begin() + r1 * cols);
    std::vector<float> a_rows(n, -7.0f), d_rows(n, -7.0f);
    kernels::gelu_with_grad_rows(h.data(), block.data(), d_rows.data(), a_rows.data(), r0, r1, cols,
                                 tanh_form);
    int64_t wrong = 0, touched = 0;
    for (int64_t i = 0; i < n; ++i) {
      const bool inside = i >= r0 * cols && i < r1 * cols;
      if (inside)
        wrong += a_rows[i] != a[i] || d_rows[i] != d_whole[i];
      else
        touched += a_rows[i] != -7.0f || d_rows[i] != -7.0f;
    }
    CHECK(wrong == 0);
    CHECK(touched == 0);
  }
}

TEST_CASE("gelu_with_grad_bf16 has gelu_with_grad's bits, its values rounded by pairs of rows") {
  // An odd count of rows (the last pair's second halves zero) and an even one, columns that do
  // and do not fill the 16-word rows (the words between zero), over more rows than one thread's
  // share; every word against bf16_pair of gelu_with_grad's values.
  Rng rng(6);
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{301, 97}, {300, 192}}) {
    const int64_t n = rows * cols, ld = (cols + 15) / 16 * 16, pair_rows = (rows + 1) / 2;
    std::vector<float> h(n), d(n);
    for (float& v : h) v = float(3 * rng.normal());
    for (float& v : d) v = float(rng.normal());
    for (bool tanh_form : {false, true}) {
      INFO("rows ", rows, ", cols ", cols, ", tanh form: ", tanh_form);
      std::vector<float> a(n), d_floats = d, d_words = d;
      std::vector<uint32_t> words(size_t(pair_rows * ld), 0xDEADBEEFu);
      kernels::gelu_with_grad(h.data(), a.data(), d_floats.data(), n, tanh_form);
      kernels::gelu_with_grad_bf16(h.data(), words.data(), d_words.data(), rows, cols, tanh_form);
      CHECK(d_words == d_floats);
      int64_t wrong = 0;
      for (int64_t p = 0; p < pair_rows; ++p)
        for (int64_t j = 0; j < ld; ++j) {
          const float first = j < cols ? a[2 * p * cols + j] : 0.0f;
          const float second = j < cols && 2 * p + 1 < rows ? a[(2 * p + 1) * cols + j] : 0.0f;
          wrong += words[p * ld + j] != bf16_pair(first, second);
        }
      CHECK(wrong == 0);
    }
  }
}

// phi clamps x^2 at 169 and skips exp's own clamp (gelu_math.h): the bits of the plain
// formulation, x clamped to [-13, 13] and exp clamped, over a sweep of every 4099th float
// pattern (both signs, subnormals, infinities) and the edges around 13.
TEST_CASE("GELU's phi has the bits of clamping x to [-13, 13] and exp's argument") {
  auto plain = [](float x) {
    x = std::min(std::max(x, -13.0f), 13.0f);
    return 0.3989422804014327f * vec::exp(-0.5f * x * x);
  };
  std::vector<float> xs = {13.0f, -13.0f, std::nextafter(13.0f, 14.0f), std::nextafter(13.0f, 0.0f),
                           0.0f, -0.0f, 1e30f, -1e30f};
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 4099)
    xs.push_back(std::bit_cast<float>(uint32_t(bits)));
  int64_t mismatches = 0;
  for (float x : xs)
    if (!std::isnan(x))
      mismatches += std::bit_cast<uint32_t>(gelu_math::phi(x)) != std::bit_cast<uint32_t>(plain(x));
  CHECK(xs.size() > 1000000);
  CHECK(mismatches == 0);
}
