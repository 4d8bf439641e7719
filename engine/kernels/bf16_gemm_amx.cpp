// The AMX tiles of a bf16 product (Intel Sapphire Rapids and later). One tdpbf16ps multiplies
// a 16 x 32 tile of A (16 rows of 16 pairs) by a 16 x 16 tile of B (16 pairs of 16 columns,
// the same interleaved pairs as the AVX512-BF16 panels) and adds the products to a 16 x 16
// tile of float sums: 8192 multiply-adds per instruction.
//
// The packing makes every tile whole, so no tile is ever configured smaller: op(A)'s rows are
// padded to a multiple of 32 and its pairs to a multiple of 16, with zeros, and each row's
// pairs are contiguous (Bf16Operands::a_pair = 1); op(B)'s panels are 32 or 64 columns wide
// and their pairs padded to a multiple of 16 the same way. Zeros add nothing to the sums.
// Four C tiles (32 x 32 of C), two A tiles and two B tiles use all eight tile registers.
//
// The tile instructions run only where bf16_hardware() is amx. bf16_rows_amx_model below does
// the same steps in plain C++ on the same packed operands, tile by tile, so the tests check
// the layout, padding and blocking on every machine; where AMX is present they also compare
// the tiles themselves against it.
#include <immintrin.h>

#include <algorithm>
#include <bit>

#include "engine/kernels/bf16_gemm_parts.h"

namespace vg::detail {
namespace {

constexpr int kTile = 16;       // rows of a tile; floats (or pairs) in a tile row of 64 bytes
constexpr int kTilePairs = 16;  // pairs of k per tile step

// The 64-byte tile configuration of ldtilecfg (palette 1): tiles 0-3 hold C, 4-5 A, 6-7 B,
// each 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
  TileConfig() {
    for (int t = 0; t < 8; ++t) bytes_per_row[t] = 64, rows[t] = kTile;
  }
};
static_assert(sizeof(TileConfig) == 64);

// C[i..i+32) x [j..j+32) of the sums over pairs [p0, p1) into `out` (32 x 32 floats).
__attribute__((target("amx-tile,amx-bf16"))) void block32(const Bf16Operands& ops, int64_t i,
                                                          const uint32_t* panel, int64_t p0,
                                                          int64_t p1, float* out) {
  const int64_t a_stride = ops.a_row * 4, b_stride = ops.panel_cols * 4;
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t p = p0; p < p1; p += kTilePairs) {
    _tile_loadd(4, ops.a + i * ops.a_row + p, a_stride);
    _tile_loadd(5, ops.a + (i + kTile) * ops.a_row + p, a_stride);
    _tile_loadd(6, panel + p * ops.panel_cols, b_stride);
    _tile_loadd(7, panel + p * ops.panel_cols + kTile, b_stride);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  constexpr int64_t ld = 2 * kTile * 4;  // bytes between rows of `out`
  _tile_stored(0, out, ld);
  _tile_stored(1, out + kTile, ld);
  _tile_stored(2, out + kTile * 2 * kTile, ld);
  _tile_stored(3, out + kTile * 2 * kTile + kTile, ld);
}

// What tdpbf16ps does to one element (Intel SDM): both products of a pair, exact in float,
// added in turn, the second term's first.
float dot_pair(float sum, uint32_t a, uint32_t b) {
  auto high = [](uint32_t w) { return std::bit_cast<float>(w & 0xFFFF0000u); };
  auto low = [](uint32_t w) { return std::bit_cast<float>(w << 16); };
  sum += high(a) * high(b);
  return sum + low(a) * low(b);
}

// block32 in plain C++: tile loads as copies, tdpbf16ps as loops.
void block32_model(const Bf16Operands& ops, int64_t i, const uint32_t* panel, int64_t p0,
                   int64_t p1, float* out) {
  std::fill(out, out + 4 * kTile * kTile, 0.0f);
  for (int64_t p = p0; p < p1; p += kTilePairs)
    for (int r = 0; r < 2 * kTile; ++r)
      for (int col = 0; col < 2 * kTile; ++col) {
        float& sum = out[r * 2 * kTile + col];
        for (int t = 0; t < kTilePairs; ++t)
          sum = dot_pair(sum, ops.a[(i + r) * ops.a_row + p + t],
                         panel[(p + t) * ops.panel_cols + col]);
      }
}

template <class Block>
void rows_of_blocks(const Bf16Operands& ops, int64_t i0, int64_t i1, int64_t n, int64_t p0,
                    int64_t p1, float alpha, float beta, const float* start, float* c, int64_t ldc,
                    Block block) {
  alignas(64) float sums[2 * kTile * 2 * kTile];
  const int64_t width = ops.panel_cols, panels = (n + width - 1) / width;
  for (int64_t q = 0; q < panels; ++q) {
    const uint32_t* panel = ops.b + q * ops.pairs * width;
    for (int64_t jb = 0; jb < width && q * width + jb < n; jb += 2 * kTile) {
      const int64_t j = q * width + jb, cols = std::min<int64_t>(2 * kTile, n - j);
      for (int64_t i = i0; i < i1; i += 2 * kTile) {
        block(ops, i, panel + jb, p0, p1, sums);
        const int64_t rows = std::min<int64_t>(2 * kTile, i1 - i);
        for (int64_t r = 0; r < rows; ++r) {
          float* cr = c + (i + r) * ldc + j;
          const float* sr = sums + r * 2 * kTile;
          for (int64_t s = 0; s < cols; ++s) {
            const float sum = start ? start[j + s] + sr[s] : sr[s];
            cr[s] = beta == 0.0f ? alpha * sum : alpha * sum + beta * cr[s];
          }
        }
      }
    }
  }
}

}  // namespace

__attribute__((target("amx-tile,amx-bf16"))) void bf16_rows_amx(const Bf16Operands& ops, int64_t i0,
                                                                int64_t i1, int64_t n, int64_t p0,
                                                                int64_t p1, float alpha, float beta,
                                                                const float* start, float* c,
                                                                int64_t ldc) {
  static const TileConfig config;
  _tile_loadconfig(&config);
  rows_of_blocks(ops, i0, i1, n, p0, p1, alpha, beta, start, c, ldc, block32);
  _tile_release();
}

void bf16_rows_amx_model(const Bf16Operands& ops, int64_t i0, int64_t i1, int64_t n, int64_t p0,
                         int64_t p1, float alpha, float beta, const float* start, float* c,
                         int64_t ldc) {
  rows_of_blocks(ops, i0, i1, n, p0, p1, alpha, beta, start, c, ldc, block32_model);
}

}  // namespace vg::detail
