// A product that hands each block of C's rows to a pass as it finishes them, instead of storing
// C (engine/kernels/made_rows.h RowsDone; bf16_gemm.h gemm_bf16_then, and the float tiles'
// product in fp32): the product's bits, every row handed over once, in blocks that start on a
// pair of rows.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "engine/core/parallel.h"
#include "engine/core/rng.h"
#include "engine/kernels/bf16_gemm.h"
#include "engine/kernels/bf16_gemm_parts.h"
#include "engine/kernels/blas.h"
#include "engine/kernels/matmul_precision.h"
#include "tests/engine/bf16_tiles_helpers.h"
#include "tests/engine/bits_helpers.h"
#include "tests/engine/float_tiles_helpers.h"

using namespace vg;
using vg::testing::random_floats;
using vg::testing::same_bits;

namespace {

struct Shape3 {
  int64_t m, n, k;
};

// What a pass was handed: how often each row, each block's first row, and the rows' values.
struct Seen {
  std::vector<std::atomic<int>> times;
  std::vector<float> rows;
  std::mutex mutex;
  std::vector<int64_t> firsts;
  Seen(int64_t m, int64_t n) : times(m), rows(m * n) {}
};

RowsDone record_into(int64_t n, Seen& seen) {
  return [n, &seen](int64_t r0, int64_t r1, const float* rows) {
    {
      const std::lock_guard<std::mutex> lock(seen.mutex);
      seen.firsts.push_back(r0);
    }
    for (int64_t r = r0; r < r1; ++r) {
      seen.times[r]++;
      std::copy(rows + (r - r0) * n, rows + (r - r0 + 1) * n, seen.rows.begin() + r * n);
    }
  };
}

// How many rows `seen` was handed exactly once; every block's first row is checked even.
int64_t rows_handed_once(const Seen& seen) {
  int64_t once = 0;
  for (const auto& n : seen.times) once += n.load() == 1;
  for (const int64_t r0 : seen.firsts) CHECK(r0 % 2 == 0);
  return once;
}

}  // namespace

TEST_CASE("gemm_bf16_then hands each finished block of C's rows over once, with C's bits") {
  // Blocks of C's rows by 32 (AMX) or 48 (AVX512-BF16), an odd m, a k over one chunk, a small
  // product (the fmas' route on AMX CPUs: C made whole, then handed over by pairs of rows).
  const Shape3 shapes[] = {{700, 96, 40}, {97, 768, 192}, {131, 64, 600}, {9, 24, 17}};
  const int threads = num_threads();
  for (const Shape3 s : shapes)
    for (const Bf16Tiles tiles : testing::bf16_tiles_here())
      for (int t : {1, 2}) {
        INFO("m ", s.m, " n ", s.n, " k ", s.k, ", tiles ", int(tiles), ", threads ", t);
        set_num_threads(t);
        Rng rng(uint64_t(s.m * 7 + s.n + s.k));
        const auto a = random_floats(s.m * s.k, rng), b = random_floats(s.k * s.n, rng);
        std::vector<float> c(s.m * s.n);
        gemm_bf16(false, false, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, 0.0f, c.data(),
                  s.n, nullptr, tiles);
        Seen seen(s.m, s.n);
        gemm_bf16_then(s.m, s.n, s.k, a.data(), b.data(), record_into(s.n, seen), tiles);
        CHECK(same_bits(seen.rows, c));
        CHECK(rows_handed_once(seen) == s.m);
      }
  set_num_threads(threads);
}

TEST_CASE("the bf16 forwards hand finished blocks of C's rows over once, with C's bits") {
  // C = A B^T + bias with A stored and kept, made on demand, or rounded already; a product
  // small enough for the fmas' route on AMX CPUs among them.
  const Shape3 shapes[] = {{700, 96, 40}, {131, 192, 768}, {9, 24, 17}};
  for (const Shape3 s : shapes)
    for (const Bf16Tiles tiles : testing::bf16_tiles_here()) {
      INFO("m ", s.m, " n ", s.n, " k ", s.k, ", tiles ", int(tiles));
      Rng rng(uint64_t(s.m * 5 + s.n + s.k));
      const auto a = random_floats(s.m * s.k, rng), w = random_floats(s.n * s.k, rng);
      const auto bias = random_floats(s.n, rng);
      std::vector<float> c(s.m * s.n);
      gemm_bf16(false, true, s.m, s.n, s.k, 1.0f, a.data(), s.k, w.data(), s.k, 0.0f, c.data(),
                s.n, bias.data(), tiles);
      auto check_handed = [&](const char* form, auto run) {
        INFO(form);
        Seen seen(s.m, s.n);
        const RowsDone done = record_into(s.n, seen);
        run(&done);
        CHECK(same_bits(seen.rows, c));
        CHECK(rows_handed_once(seen) == s.m);
      };
      check_handed("kept", [&](const RowsDone* done) {
        Bf16Rows kept;
        gemm_bf16_keeping_a(s.m, s.n, s.k, a.data(), w.data(), bias.data(), nullptr, kept, tiles,
                            done);
      });
      auto fill = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1, float* out) {
        for (int64_t r = r0; r < r1; ++r)
          std::copy(a.begin() + r * s.k + c0, a.begin() + r * s.k + c1,
                    out + (r - r0) * (c1 - c0));
      };
      const MadeRows made{s.m, s.k, fill};
      check_handed("made", [&](const RowsDone* done) {
        gemm_bf16_made_a(made, s.n, w.data(), s.k, nullptr, s.n, bias.data(), tiles, done);
      });
      Bf16Rows rounded = make_bf16_rows(s.m, s.k);
      for (int64_t i = 0; i < s.m; ++i)
        detail::bf16_pairs_of_row(a.data() + i * s.k, s.k, rounded.words() + i * rounded.ld());
      check_handed("rounded", [&](const RowsDone* done) {
        gemm_bf16_rounded_a(rounded, s.n, w.data(), s.k, nullptr, s.n, bias.data(), tiles, done);
      });
    }
}

TEST_CASE(
    "gemm_then hands rows over in bf16 mode and on the float tiles, one clear error elsewhere") {
  // In fp32, on each kind of float tiles: blocks of 48 (AVX2) or 96 rows (AVX-512) and a last
  // short one, k in one chunk of 256 and in three (the last short), C one panel wide and
  // several; each time with the stored product's bits. Too few rows for the tiles (40), or
  // OpenBLAS alone, and gemm_then refuses, as products_by_row_blocks said beforehand.
  const Shape3 taken[] = {{700, 96, 40}, {97, 768, 192}, {131, 16, 600}}, refused = {40, 96, 40};
  const int threads = num_threads();
  testing::for_each_float_tiles([&](detail::FloatTiles tiles) {
    const MatmulPrecisionGuard fp32(MatmulPrecision::fp32);
    for (const Shape3 s : taken)
      for (int t : {1, 2}) {
        INFO("m ", s.m, " n ", s.n, " k ", s.k, ", threads ", t);
        set_num_threads(t);
        Rng rng(uint64_t(s.m * 3 + s.n + s.k));
        const auto a = random_floats(s.m * s.k, rng), b = random_floats(s.k * s.n, rng);
        std::vector<float> c(s.m * s.n);
        gemm(false, false, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, 0.0f, c.data(), s.n);
        const bool hands = tiles != detail::FloatTiles::none;
        CHECK(products_by_row_blocks(s.m, s.n, s.k) == hands);
        if (!hands) continue;
        Seen seen(s.m, s.n);
        gemm_then(s.m, s.n, s.k, a.data(), b.data(), record_into(s.n, seen));
        CHECK(same_bits(seen.rows, c));
        CHECK(rows_handed_once(seen) == s.m);
      }
    set_num_threads(threads);
    const std::vector<float> a(refused.m * refused.k), b(refused.k * refused.n);
    CHECK_FALSE(products_by_row_blocks(refused.m, refused.n, refused.k));
    CHECK_THROWS_WITH_AS(gemm_then(refused.m, refused.n, refused.k, a.data(), b.data(),
                                   [](int64_t, int64_t, const float*) {}),
                         doctest::Contains("gemm_then: no product here hands the rows of a 40 x "
                                           "96 x 40 product over block by block"),
                         Error);
  });
  // In bf16 mode every shape, the small one too.
  const testing::Bf16ModelWhereNeeded model;  // bf16 on a CPU without bf16 units too
  const MatmulPrecisionGuard amp(MatmulPrecision::bf16);
  Rng rng(3);
  const int64_t m = refused.m, n = refused.n, k = refused.k;
  const auto a = random_floats(m * k, rng), b = random_floats(k * n, rng);
  std::vector<float> expected(m * n);
  Seen seen(m, n);
  CHECK(products_by_row_blocks(m, n, k));
  gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, expected.data(), n);
  gemm_then(m, n, k, a.data(), b.data(), record_into(n, seen));
  CHECK(same_bits(seen.rows, expected));
  CHECK(rows_handed_once(seen) == m);
}
