// A bf16 product whose A is already rounded to bf16 by rows (engine/kernels/bf16_gemm.h
// gemm_bf16_rounded_a) against the same product on the floats: the same bits on every kind of
// tiles, since its words are the ones the packer would make.
#include <doctest/doctest.h>

#include <vector>

#include "engine/core/error.h"
#include "engine/core/parallel.h"
#include "engine/core/rng.h"
#include "engine/kernels/bf16_gemm.h"
#include "engine/kernels/bf16_gemm_parts.h"
#include "engine/kernels/blas.h"
#include "engine/kernels/matmul_precision.h"
#include "tests/engine/bf16_tiles_helpers.h"
#include "tests/engine/bits_helpers.h"

using namespace vg;
using vg::testing::random_floats;
using vg::testing::same_bits;

namespace {

// x (rows x cols) rounded by rows, each row's pairs as the packer makes them.
Bf16Rows rounded_rows(const std::vector<float>& x, int64_t rows, int64_t cols) {
  Bf16Rows out = make_bf16_rows(rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    detail::bf16_pairs_of_row(x.data() + r * cols, cols, out.words() + r * out.ld());
  return out;
}

}  // namespace

TEST_CASE("a bf16 product on an A rounded by rows has the bits of the one on its floats") {
  struct Shape3 {
    int64_t m, n, k;
  };
  const int threads = num_threads();
  // fc2's forward (one or several panels of W), an odd k, fewer rows than a block.
  for (const Shape3 s : {Shape3{700, 48, 192}, Shape3{97, 130, 99}, Shape3{5, 16, 7}}) {
    Rng rng(uint64_t(s.m + 7 * s.n + s.k));
    const auto x = random_floats(s.m * s.k, rng), w = random_floats(s.n * s.k, rng);
    const auto bias = random_floats(s.n, rng);
    const Bf16Rows words = rounded_rows(x, s.m, s.k);
    for (const Bf16Tiles tiles : testing::bf16_tiles_here())
      for (int t : {1, 2}) {
        INFO("m ", s.m, " n ", s.n, " k ", s.k, ", tiles ", int(tiles), ", threads ", t);
        set_num_threads(t);
        std::vector<float> on_floats(s.m * s.n), on_words(s.m * s.n);
        gemm_bf16(false, true, s.m, s.n, s.k, 1.0f, x.data(), s.k, w.data(), s.k, 0.0f,
                  on_floats.data(), s.n, bias.data(), tiles);
        gemm_bf16_rounded_a(words, s.n, w.data(), s.k, on_words.data(), s.n, bias.data(), tiles);
        CHECK(same_bits(on_floats, on_words));
      }
  }
  set_num_threads(threads);
}

TEST_CASE("a rounded A by pairs of rows, or outside bf16 mode, is one clear error") {
  const testing::Bf16ModelWhereNeeded model;  // on a CPU without bf16 units
  const Bf16Rows by_pairs = make_bf16_rows(4, 6, /*row_pairs=*/true);
  const std::vector<float> w(3 * 6, 1.0f);
  std::vector<float> c(4 * 3);
  CHECK_THROWS_WITH_AS(gemm_bf16_rounded_a(by_pairs, 3, w.data(), 6, c.data(), 3),
                       doctest::Contains("A must be rounded by rows"), Error);
  const MatmulPrecisionGuard fp32(MatmulPrecision::fp32);
  CHECK_THROWS_WITH_AS(gemm_bias_rounded(make_bf16_rows(4, 6), 3, w.data(), nullptr, c.data()),
                       doctest::Contains("gemm_bias_rounded: a bf16 operand outside bf16 mode"),
                       Error);
}
