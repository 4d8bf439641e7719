// Products with an operand made on demand (engine/kernels/made_rows.h) against the same
// products on the stored matrix: the same bits, and in bf16 never the whole matrix at once.
#include "engine/kernels/made_rows.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/core/parallel.h"
#include "engine/core/rng.h"
#include "engine/kernels/bf16_gemm.h"
#include "engine/kernels/blas.h"
#include "engine/kernels/im2col.h"
#include "engine/kernels/matmul_precision.h"
#include "engine/ops/ops.h"
#include "tests/engine/bf16_tiles_helpers.h"
#include "tests/engine/bits_helpers.h"
#include "tests/engine/float_tiles_helpers.h"
#include "tests/engine/gradcheck_helpers.h"

using namespace vg;
using vg::testing::random_floats;
using vg::testing::same_bits;
using vg::testing::variable;

namespace {

// A stored matrix handed out as rows made on demand; `largest` records the most rows asked
// for at once.
MadeRows made_from(const std::vector<float>& stored, int64_t rows, int64_t cols,
                   std::atomic<int64_t>& largest) {
  return {rows, cols,
          [&stored, cols, &largest](int64_t r0, int64_t r1, int64_t c0, int64_t c1, float* out) {
            for (int64_t r = r0; r < r1; ++r)
              std::copy(stored.begin() + r * cols + c0, stored.begin() + r * cols + c1,
                        out + (r - r0) * (c1 - c0));
            int64_t seen = largest.load();
            while (r1 - r0 > seen && !largest.compare_exchange_weak(seen, r1 - r0)) {
            }
          }};
}

// check(tiles) for every kind of tiles this CPU runs (and the AMX model), on one and two
// threads.
template <class Check>
void for_each_setting(Check check) {
  const int threads = num_threads();
  for (const Bf16Tiles tiles : testing::bf16_tiles_here(/*with_fma=*/false))
    for (int t : {1, 2}) {
      INFO("tiles ", int(tiles), ", threads ", t);
      set_num_threads(t);
      check(tiles);
    }
  set_num_threads(threads);
}

}  // namespace

TEST_CASE("a bf16 product with an operand made on demand has the stored product's bits") {
  struct Shape3 {
    int64_t m, n, k;
  };
  // A convolution's forward, C = X W^T + bias: one or several panels of W, an odd k.
  for (const Shape3 s : {Shape3{700, 32, 288}, Shape3{97, 64, 576}, Shape3{300, 130, 99}}) {
    INFO("forward m ", s.m, " n ", s.n, " k ", s.k);
    Rng rng(uint64_t(s.m + s.n + s.k));
    const auto x = random_floats(s.m * s.k, rng), w = random_floats(s.n * s.k, rng);
    const auto bias = random_floats(s.n, rng);
    for_each_setting([&](Bf16Tiles tiles) {
      std::atomic<int64_t> largest{0};
      std::vector<float> stored(s.m * s.n), made(s.m * s.n);
      gemm_bf16(false, true, s.m, s.n, s.k, 1.0f, x.data(), s.k, w.data(), s.k, 0.0f, stored.data(),
                s.n, bias.data(), tiles);
      gemm_bf16_made_a(made_from(x, s.m, s.k, largest), s.n, w.data(), s.k, made.data(), s.n,
                       bias.data(), tiles);
      CHECK(same_bits(stored, made));
      CHECK(largest.load() < s.m);
    });
  }
  // Its weight gradient, C = dY^T X with k = positions: C split by columns and by rows.
  for (const Shape3 s : {Shape3{64, 288, 1700}, Shape3{96, 64, 1300}, Shape3{32, 576, 600}}) {
    INFO("weight gradient m ", s.m, " n ", s.n, " k ", s.k);
    Rng rng(uint64_t(s.m * 3 + s.n + s.k));
    const auto dy = random_floats(s.k * s.m, rng), x = random_floats(s.k * s.n, rng);
    for_each_setting([&](Bf16Tiles tiles) {
      std::atomic<int64_t> largest{0};
      std::vector<float> stored(s.m * s.n), made(s.m * s.n);
      gemm_bf16(true, false, s.m, s.n, s.k, 1.0f, dy.data(), s.m, x.data(), s.n, 0.0f,
                stored.data(), s.n, nullptr, tiles);
      gemm_bf16_made_b(s.m, dy.data(), s.m, made_from(x, s.k, s.n, largest), made.data(), s.n,
                       tiles);
      CHECK(same_bits(stored, made));
      CHECK(largest.load() < s.k);
    });
  }
}

// On float fmas (a small product's route on AMX machines) the made operand is made whole
// first, and the product has the stored product's bits, in both directions.
TEST_CASE("a small bf16 product on fmas with an operand made on demand has the stored bits") {
  if (!testing::cpu_runs_bf16_fmas()) {
    MESSAGE("skipped: this CPU has no AVX2 and FMA");
    return;
  }
  Rng rng(21);
  const int64_t m = 40, n = 24, k = 27;
  const auto x = random_floats(m * k, rng), w = random_floats(n * k, rng);
  const auto bias = random_floats(n, rng), dy = random_floats(m * n, rng);
  std::atomic<int64_t> largest{0};
  std::vector<float> stored(m * n), made(m * n), dw(n * k), dw_made(n * k);
  gemm_bf16(false, true, m, n, k, 1.0f, x.data(), k, w.data(), k, 0.0f, stored.data(), n,
            bias.data(), Bf16Tiles::fma);
  gemm_bf16_made_a(made_from(x, m, k, largest), n, w.data(), k, made.data(), n, bias.data(),
                   Bf16Tiles::fma);
  CHECK(same_bits(stored, made));
  gemm_bf16(true, false, n, k, m, 1.0f, dy.data(), n, x.data(), k, 0.0f, dw.data(), k, nullptr,
            Bf16Tiles::fma);
  gemm_bf16_made_b(n, dy.data(), n, made_from(x, m, k, largest), dw_made.data(), k, Bf16Tiles::fma);
  CHECK(same_bits(dw, dw_made));
}

TEST_CASE("gemm_bias_made and gemm_tn_made have the stored products' bits in either precision") {
  const testing::Bf16ModelWhereNeeded model;  // bf16 on a CPU without bf16 units too
  const MatmulPrecision precisions[] = {MatmulPrecision::fp32, MatmulPrecision::bf16};
  Rng rng(5);
  const int64_t rows = 900, k = 72, n = 24;
  const auto x = random_floats(rows * k, rng), w = random_floats(n * k, rng);
  const auto bias = random_floats(n, rng), dy = random_floats(rows * n, rng);
  for (const MatmulPrecision precision : precisions) {
    CAPTURE(matmul_precision_name(precision));
    const MatmulPrecisionGuard guard(precision);
    CHECK(products_make_rows() == (precision == MatmulPrecision::bf16));
    std::atomic<int64_t> largest{0};
    std::vector<float> y(rows * n), y_made(rows * n), dw(n * k), dw_made(n * k);
    gemm_bias(rows, n, k, x.data(), w.data(), bias.data(), y.data());
    gemm_bias_made(made_from(x, rows, k, largest), n, w.data(), bias.data(), y_made.data());
    CHECK(same_bits(y, y_made));
    gemm(true, false, n, k, rows, 1.0f, dy.data(), n, x.data(), k, 0.0f, dw.data(), k);
    gemm_tn_made(n, dy.data(), made_from(x, rows, k, largest), dw_made.data());
    CHECK(same_bits(dw, dw_made));
  }
}

// fp32 on the engine's float tiles (engine/kernels/gemm_tiled_made.h): each thread makes a block of
// rows at a time, never its whole share of the matrix, for the shapes the tiles take; on OpenBLAS,
// or for a shape the tiles do not take, the matrix is made whole. The bits are the stored product's
// either way. The shapes: k in one chunk of 256 and in two (the last short), rows that end in a
// part of a tile and of a block, a weight gradient whose k ends in a short chunk, and C^T as wide
// as one panel of AVX-512 and wider (72 columns); then shapes that the tiles leave whole: too few
// rows (40), a Y narrower than a panel (10 columns) and a C^T no wider than C (n = k).
TEST_CASE("fp32 products with an operand made on demand have the stored bits, in blocks on tiles") {
  struct Shape {
    int64_t rows, k, n;
  };
  Rng rng(6);
  testing::for_each_float_tiles([&](detail::FloatTiles tiles) {
    for (const Shape s : {Shape{900, 72, 24}, Shape{901, 300, 24}, Shape{1000, 72, 40},
                          Shape{40, 72, 24}, Shape{900, 72, 10}, Shape{900, 24, 24}})
      for (const int threads : {1, 2}) {
        CAPTURE(s.rows);
        CAPTURE(s.k);
        CAPTURE(s.n);
        CAPTURE(threads);
        const int before = num_threads();
        set_num_threads(threads);
        const auto x = random_floats(s.rows * s.k, rng), w = random_floats(s.n * s.k, rng);
        const auto bias = random_floats(s.n, rng), dy = random_floats(s.rows * s.n, rng);
        std::vector<float> y(s.rows * s.n), y_made(y.size()), dw(s.n * s.k), dw_made(dw.size());
        std::atomic<int64_t> largest{0};
        gemm_bias(s.rows, s.n, s.k, x.data(), w.data(), bias.data(), y.data());
        gemm_bias_made(made_from(x, s.rows, s.k, largest), s.n, w.data(), bias.data(),
                       y_made.data());
        CHECK(same_bits(y, y_made));
        gemm_bias(s.rows, s.n, s.k, x.data(), w.data(), nullptr, y.data());  // no bias: from zero
        gemm_bias_made(made_from(x, s.rows, s.k, largest), s.n, w.data(), nullptr, y_made.data());
        CHECK(same_bits(y, y_made));
        gemm(true, false, s.n, s.k, s.rows, 1.0f, dy.data(), s.n, x.data(), s.k, 0.0f, dw.data(),
             s.k);
        gemm_tn_made(s.n, dy.data(), made_from(x, s.rows, s.k, largest), dw_made.data());
        CHECK(same_bits(dw, dw_made));
        const bool in_blocks = products_make_rows_for(s.rows, s.k, s.n);
        CHECK(in_blocks ==
              (tiles != detail::FloatTiles::none && s.rows >= 900 && s.n >= 16 && s.k > s.n));
        // In blocks: a tile block's rows (48) or a chunk of k (256); whole: each thread's share.
        if (in_blocks)
          CHECK(largest.load() <= 256);
        else
          CHECK(largest.load() >= s.rows / threads);
        set_num_threads(before);
      }
  });
}

TEST_CASE("conv2d has its stored form's bits, its columns made from the image") {
  const testing::Bf16ModelWhereNeeded model;           // on a CPU without bf16 units
  const int64_t c_in = 8, c_out = 16, len = 9 * c_in;  // rows of 72 columns: made, not kept
  const MatmulPrecision precisions[] = {MatmulPrecision::fp32, MatmulPrecision::bf16};
  for (const MatmulPrecision precision : precisions)
    for (const int64_t stride : {1, 2}) {
      CAPTURE(matmul_precision_name(precision));
      const MatmulPrecisionGuard amp(precision);
      CAPTURE(stride);
      const kernels::ConvGeometry g{4, 10, 10, c_in, 3, stride, 1};
      Tensor x = variable({4, 10, 10, c_in}, 21).detach().to(DType::f32).set_requires_grad();
      Tensor w = variable({c_out, c_in, 3, 3}, 22).detach().to(DType::f32).set_requires_grad();
      Tensor b = variable({c_out}, 23).detach().to(DType::f32).set_requires_grad();
      const Tensor dy =
          variable({4, g.out_height(), g.out_width(), c_out}, 24).detach().to(DType::f32);
      Tensor y;
      {
        FlopCounter flops;
        y = conv2d(x, w, b, stride, 1);
        CHECK(flops.matmul() == 2.0 * g.rows() * len * c_out);
      }
      y.backward(dy);
      // Made in blocks in bf16 mode, and in fp32 on float tiles where the weight gradient's k (the
      // output positions) reaches one chunk of 256: stride 1 (400), not stride 2 (100).
      CHECK(products_make_rows_for(g.rows(), len, c_out) ==
            (precision == MatmulPrecision::bf16 ||
             (stride == 1 && detail::float_tiles() != detail::FloatTiles::none)));
      // The stored form: the columns, then linear's product and the weight gradient's.
      Tensor columns = Tensor::empty({g.rows(), len});
      kernels::im2col(g, x.detach().data<float>(), columns.data<float>());
      const Tensor w2 = permute(w.detach(), {0, 2, 3, 1}).reshape({c_out, len});
      const Tensor y_stored = linear(columns, w2, b.detach());
      const Tensor dw_stored = permute(
          matmul(dy.reshape({g.rows(), c_out}), columns, true, false).reshape({c_out, 3, 3, c_in}),
          {0, 3, 1, 2});
      CHECK(y.to_vector() == y_stored.to_vector());
      CHECK(w.grad().to_vector() == dw_stored.to_vector());
    }
}
