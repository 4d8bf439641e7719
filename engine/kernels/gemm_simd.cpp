#include "engine/kernels/gemm_simd.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "engine/core/error.h"
#include "engine/kernels/gemm_tiled_made.h"

namespace vg::detail {
namespace {

bool cpu_has(FloatTiles tiles) {
  switch (tiles) {
    case FloatTiles::avx512:
      return __builtin_cpu_supports("avx512f");
    case FloatTiles::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case FloatTiles::none:
      break;
  }
  return true;
}

FloatTiles chosen_at_start() {
  const char* choice = std::getenv("VITGRAD_GEMM");
  if (choice && std::strcmp(choice, "blas") == 0) return FloatTiles::none;
  if (choice && std::strcmp(choice, "avx2") == 0 && cpu_has(FloatTiles::avx2))
    return FloatTiles::avx2;
  for (const FloatTiles widest : {FloatTiles::avx512, FloatTiles::avx2})
    if (cpu_has(widest)) return widest;
  return FloatTiles::none;
}

std::atomic<FloatTiles>& tiles_in_use() {
  static std::atomic<FloatTiles> tiles{chosen_at_start()};
  return tiles;
}

}  // namespace

FloatTiles float_tiles() {
  return tiles_in_use().load(std::memory_order_relaxed);
}

void use_float_tiles(FloatTiles tiles) {
  check(cpu_has(tiles), std::string("float products: this CPU has no ") + float_tiles_name(tiles) +
                            " instructions");
  tiles_in_use().store(tiles, std::memory_order_relaxed);
}

const char* float_tiles_name(FloatTiles tiles) {
  switch (tiles) {
    case FloatTiles::avx512:
      return "AVX-512";
    case FloatTiles::avx2:
      return "AVX2";
    case FloatTiles::none:
      break;
  }
  return "OpenBLAS";
}

namespace {

// The products of the tiles in use; null for OpenBLAS.
const TiledProducts* tiled_products() {
  switch (float_tiles()) {
    case FloatTiles::avx512:
      return &avx512_products();
    case FloatTiles::avx2:
      return &avx2_products();
    case FloatTiles::none:
      break;
  }
  return nullptr;
}

}  // namespace

bool gemm_simd(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
               const float* start) {
  const TiledProducts* tiles = tiled_products();
  return tiles && tiles->product(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, start);
}

bool gemm_simd_tn_sums(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                       float* sums) {
  const TiledProducts* tiles = tiled_products();
  return tiles && tiles->product_tn_sums(m, n, k, a, b, c, sums);
}

bool gemm_simd_small(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                     int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const TiledProducts* tiles = tiled_products();
  if (!tiles || (ta && tb) || m <= 0 || n <= 0 || k <= 0) return false;
  tiles->small_product(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nullptr);
  return true;
}

bool gemm_simd_makes_rows(int64_t rows, int64_t cols, int64_t n) {
  const TiledProducts* tiles = tiled_products();
  return tiles && tiles->makes_rows(rows, cols, n);
}

bool gemm_simd_by_row_blocks(int64_t m, int64_t n, int64_t k) {
  return tiled_products() && tiled::made_a_fits(m, n, k);
}

bool gemm_simd_made_a(const MadeRows& a, int64_t n, const float* b, const float* start, float* c) {
  const TiledProducts* tiles = tiled_products();
  return tiles && tiles->product_made_a(a, n, b, start, c);
}

bool gemm_simd_tn_made(int64_t m, const float* a, const MadeRows& b, float* c) {
  const TiledProducts* tiles = tiled_products();
  return tiles && tiles->product_tn_made(m, a, b, c);
}

bool gemm_simd_then(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                    const RowsDone& done) {
  const TiledProducts* tiles = tiled_products();
  return tiles && tiles->product_then(m, n, k, a, b, done);
}

}  // namespace vg::detail
