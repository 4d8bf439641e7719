// The AMX tiles of a bf16 product (Intel Sapphire Rapids and later). One tdpbf16ps multiplies
// a 16 x 32 tile of A (16 rows of 16 pairs) by a 16 x 16 tile of B (16 pairs of 16 columns,
// the same interleaved pairs as the AVX512-BF16 panels) and adds the products to a 16 x 16
// tile of float sums: 8192 multiply-adds per instruction.
//
// A block of C is 32 x 32: four C tiles (0-3), two A tiles (4-5) and two B tiles (6-7), all
// eight tile registers, each A and B tile used twice per load. The sums stay in the tiles for
// the whole of the block's pairs and start where the product says: from zero, from C (a sum
// continued chunk after chunk of k) or from the start vector, read into every row of the
// tiles by a load whose row stride is zero. Only blocks at C's edges, and an alpha other than
// one, go through a small buffer, and whole blocks of a C written with streaming stores
// (Bf16Operands::stream_c), which leave from there.
//
// The packing makes every tile whole, so no tile is ever configured smaller: op(A)'s rows are
// padded to a multiple of 32 and its pairs to a multiple of 16, with zeros, and each row's
// pairs are contiguous (Bf16Operands::a_pair = 1); op(B)'s panels are 32 columns wide and
// their pairs padded to a multiple of 16 the same way. Zeros add nothing to the sums. Or
// op(B) is read where it lies (Bf16Operands::b_ld), where its rows of words hold whole panels
// and its pairs whole tiles (bf16_gemm.cpp).
//
// The tile instructions run only where bf16_hardware() is amx. The model below does the same
// steps in plain C++, with tdpbf16ps's own order of additions, so it gives the tiles' bits:
// the tests hold the tiles to it on AMX machines and check the layout with it on any CPU.
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "engine/kernels/bf16_gemm_parts.h"

namespace vg::detail {
namespace {

constexpr int kTile = 16;          // rows of a tile; floats (or pairs) in a tile row of 64 bytes
constexpr int kBlock = 2 * kTile;  // rows and columns of a block of C

// The 64-byte tile configuration of ldtilecfg (palette 1): all eight tiles 16 rows of 64 bytes.
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

// The lanes of a row of a block that lie inside C: 16 at a time, `cols` in all.
__mmask16 lanes(int64_t cols, int half) {
  const int64_t n = std::clamp<int64_t>(cols - 16 * half, 0, 16);
  return __mmask16((1u << n) - 1);
}

// The block at C's edge (rows x cols of it) into `sums`, zeros past the edge, for tiles that
// continue C's sums.
__attribute__((target("avx512f"))) void load_edge_avx512(const float* c, int64_t ldc, int64_t rows,
                                                         int64_t cols, float* sums) {
  for (int64_t r = 0; r < kBlock; ++r)
    for (int half = 0; half < 2; ++half) {
      const __mmask16 in_c = r < rows ? lanes(cols, half) : __mmask16(0);
      _mm512_store_ps(sums + r * kBlock + 16 * half,
                      _mm512_maskz_loadu_ps(in_c, c + r * ldc + 16 * half));
    }
}

// The tiles' sums of a block (32 floats a row) into C's rows x cols of it: as they are, or
// (`apply`) as alpha * (start + sum) + beta * C, C read only where beta is not zero.
__attribute__((target("avx512f"))) void store_edge_avx512(const float* sums, int64_t rows,
                                                          int64_t cols, bool apply, float alpha,
                                                          float beta, const float* start, float* c,
                                                          int64_t ldc) {
  const __m512 alpha_v = _mm512_set1_ps(alpha), beta_v = _mm512_set1_ps(beta);
  for (int64_t r = 0; r < rows; ++r)
    for (int half = 0; half < 2 && 16 * half < cols; ++half) {
      const __mmask16 in_c = lanes(cols, half);
      float* to = c + r * ldc + 16 * half;
      __m512 out = _mm512_load_ps(sums + r * kBlock + 16 * half);
      if (apply) {
        if (start) out = _mm512_add_ps(_mm512_maskz_loadu_ps(in_c, start + 16 * half), out);
        out = _mm512_mul_ps(alpha_v, out);
        if (beta != 0.0f && !start)  // one rounding: beta * C + out
          out = _mm512_fmadd_ps(beta_v, _mm512_maskz_loadu_ps(in_c, to), out);
      }
      _mm512_mask_storeu_ps(to, in_c, out);
    }
}

// The two as plain loops, for the model on any CPU, with their bits: the same roundings (the start
// and alpha apart, beta's product fused into its sum).
void load_edge_plain(const float* c, int64_t ldc, int64_t rows, int64_t cols, float* sums) {
  for (int64_t r = 0; r < kBlock; ++r)
    for (int64_t s = 0; s < kBlock; ++s)
      sums[r * kBlock + s] = r < rows && s < cols ? c[r * ldc + s] : 0.0f;
}

void store_edge_plain(const float* sums, int64_t rows, int64_t cols, bool apply, float alpha,
                      float beta, const float* start, float* c, int64_t ldc) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t s = 0; s < cols; ++s) {
      float out = sums[r * kBlock + s];
      if (apply) {
        if (start) out = start[s] + out;
        out = alpha * out;
        if (beta != 0.0f && !start) out = std::fma(beta, c[r * ldc + s], out);
      }
      c[r * ldc + s] = out;
    }
}

// The block's four C tiles in the hardware: loaded from a 32 x 32 block of floats `ld` apart
// (ld = 0: one row read into all 32), multiplied, stored.
struct Tiles {
  // Blocks at C's edges go through a buffer (rows_of_blocks), on AVX-512.
  static constexpr auto load_edge = load_edge_avx512;
  static constexpr auto store_edge = store_edge_avx512;
  __attribute__((target("amx-tile"))) void zero() {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  __attribute__((target("amx-tile"))) void load(const float* from, int64_t ld) {
    _tile_loadd(0, from, ld * 4);
    _tile_loadd(1, from + kTile, ld * 4);
    _tile_loadd(2, from + kTile * ld, ld * 4);
    _tile_loadd(3, from + kTile * ld + kTile, ld * 4);
  }
  // The sums over `pairs` pairs (a multiple of 16) of 32 rows of A (a_row words apart) by a
  // panel of 32 columns (its pair rows panel_ld words apart: 32 packed, more read in place).
  // Each step also fetches into L1 the same step's lines of the next block's rows of A and
  // panel (where they differ from these; null where they do not): a tile loaded from L2 holds
  // the tiles back by about a sixth.
  // With `from`, the sums start from a 32 x 32 block of floats there, `ld` apart (ld = 0: one
  // row read into all 32), instead of from the tiles as they are: each C tile is loaded in the
  // first step, after that step's A and B tiles and right before its own first product. Four
  // C tiles loaded before the block's first product held every product back: a linear's
  // forward with its bias as the start took 1.5 times as long as without it (6400 x 768 x 192
  // and 6400 x 192 x 192 on an Intel Xeon of family 6 model 207), 1.1-1.2 times this way. The
  // same products in the same order: the same bits.
  __attribute__((target("amx-tile,amx-bf16"))) void multiply(const uint32_t* a, int64_t a_row,
                                                             const uint32_t* panel,
                                                             int64_t panel_ld, int64_t pairs,
                                                             const uint32_t* next_a,
                                                             const uint32_t* next_panel,
                                                             const float* from, int64_t ld) {
    if (pairs == 0 && from) load(from, ld);
    for (int64_t p = 0; p < pairs; p += kTile) {
      if (next_a)
        for (int r = 0; r < kBlock; ++r) _mm_prefetch(next_a + r * a_row + p, _MM_HINT_T0);
      if (next_panel)
        for (int r = 0; r < kTile; ++r) {  // a pair row of 32 words: two lines
          _mm_prefetch(next_panel + (p + r) * panel_ld, _MM_HINT_T0);
          _mm_prefetch(next_panel + (p + r) * panel_ld + kTile, _MM_HINT_T0);
        }
      _tile_loadd(4, a + p, a_row * 4);
      _tile_loadd(5, a + kTile * a_row + p, a_row * 4);
      _tile_loadd(6, panel + p * panel_ld, panel_ld * 4);
      _tile_loadd(7, panel + p * panel_ld + kTile, panel_ld * 4);
      const bool starting = p == 0 && from;
      if (starting) _tile_loadd(0, from, ld * 4);
      _tile_dpbf16ps(0, 4, 6);
      if (starting) _tile_loadd(1, from + kTile, ld * 4);
      _tile_dpbf16ps(1, 4, 7);
      if (starting) _tile_loadd(2, from + kTile * ld, ld * 4);
      _tile_dpbf16ps(2, 5, 6);
      if (starting) _tile_loadd(3, from + kTile * ld + kTile, ld * 4);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  __attribute__((target("amx-tile"))) void store(float* to, int64_t ld) {
    _tile_stored(0, to, ld * 4);
    _tile_stored(1, to + kTile, ld * 4);
    _tile_stored(2, to + kTile * ld, ld * 4);
    _tile_stored(3, to + kTile * ld + kTile, ld * 4);
  }
  // The same through `buffer` (32 x 32 floats, in L1) and streaming stores.
  __attribute__((target("amx-tile,avx512f"))) void store_streaming(float* to, int64_t ld,
                                                                   float* buffer) {
    _tile_stored(0, buffer, kBlock * 4);
    _tile_stored(1, buffer + kTile, kBlock * 4);
    _tile_stored(2, buffer + kTile * kBlock, kBlock * 4);
    _tile_stored(3, buffer + kTile * kBlock + kTile, kBlock * 4);
    for (int r = 0; r < kBlock; ++r) {
      _mm512_stream_ps(to + r * ld, _mm512_load_ps(buffer + r * kBlock));
      _mm512_stream_ps(to + r * ld + kTile, _mm512_load_ps(buffer + r * kBlock + kTile));
    }
  }
};

// The tiles treat subnormal inputs as zero and flush subnormal results to zero, whatever the
// thread's floating-point mode (measured on Sapphire Rapids class hardware).
float flushed(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}

// One element of tdpbf16ps (as the hardware rounds it): the first terms of the 16 pairs summed
// in one float chain, the second terms in another, the two chains added, then that added to
// the tile's sum.
float tile_dot(float sum, const uint32_t* a, const uint32_t* b, int64_t b_ld) {
  auto first = [](uint32_t w) { return flushed(std::bit_cast<float>(w << 16)); };
  auto second = [](uint32_t w) { return flushed(std::bit_cast<float>(w & 0xFFFF0000u)); };
  float firsts = 0.0f, seconds = 0.0f;
  for (int t = 0; t < kTile; ++t) {
    firsts = flushed(firsts + flushed(first(a[t]) * first(b[t * b_ld])));
    seconds = flushed(seconds + flushed(second(a[t]) * second(b[t * b_ld])));
  }
  return flushed(flushed(sum) + flushed(firsts + seconds));
}

// Tiles in plain C++: the same block, the same steps, on any CPU.
struct TilesModel {
  static constexpr auto load_edge = load_edge_plain;
  static constexpr auto store_edge = store_edge_plain;
  float sums[kBlock][kBlock];
  void zero() { std::fill(&sums[0][0], &sums[0][0] + kBlock * kBlock, 0.0f); }
  void load(const float* from, int64_t ld) {
    for (int r = 0; r < kBlock; ++r)
      for (int s = 0; s < kBlock; ++s) sums[r][s] = from[r * ld + s];
  }
  void multiply(const uint32_t* a, int64_t a_row, const uint32_t* panel, int64_t panel_ld,
                int64_t pairs, const uint32_t*, const uint32_t*, const float* from, int64_t ld) {
    if (from) load(from, ld);
    for (int64_t p = 0; p < pairs; p += kTile)
      for (int r = 0; r < kBlock; ++r)
        for (int s = 0; s < kBlock; ++s)
          sums[r][s] =
              tile_dot(sums[r][s], a + r * a_row + p, panel + p * panel_ld + s, panel_ld);
  }
  void store(float* to, int64_t ld) const {
    for (int r = 0; r < kBlock; ++r)
      for (int s = 0; s < kBlock; ++s) to[r * ld + s] = sums[r][s];
  }
  void store_streaming(float* to, int64_t ld, float*) const { store(to, ld); }
};

// Rows [i0, i1) of C, block by block, on `tiles`. With alpha = 1 and beta 0 or 1 (or a start
// vector, which takes beta's place) the whole element is the tiles' sum; otherwise the tiles
// sum from zero and alpha, the start and beta * C are applied to the block afterwards.
template <class TileKind>
void rows_of_blocks(TileKind& tiles, const Bf16Operands& ops, int64_t i0, int64_t i1, int64_t n,
                    int64_t p0, int64_t p1, float alpha, float beta, const float* start, float* c,
                    int64_t ldc) {
  alignas(64) float edge[kBlock * kBlock];  // a block at C's edge, or before alpha and beta
  alignas(64) float start_row[kBlock];      // the start vector's columns of the block, padded
  const bool in_tiles = alpha == 1.0f && (start || beta == 0.0f || beta == 1.0f);
  for (int64_t j = 0; j < n; j += kBlock) {
    const int64_t cols = std::min<int64_t>(kBlock, n - j);
    const uint32_t* panel = ops.panel(j / kBlock, p0);
    if (start) {
      std::copy(start + j, start + j + cols, start_row);
      std::fill(start_row + cols, start_row + kBlock, 0.0f);
    }
    for (int64_t i = i0; i < i1; i += kBlock) {
      const int64_t rows = std::min<int64_t>(kBlock, i1 - i);
      const bool whole = rows == kBlock && cols == kBlock;
      float* block = c + i * ldc + j;
      // Where the sums start, for multiply to load: the start row, C's block (at C's edge through
      // `edge`), or nowhere (zero).
      const float* sums_from = nullptr;
      int64_t sums_ld = 0;
      if (in_tiles && start) {
        sums_from = start_row;
      } else if (in_tiles && beta == 1.0f && whole) {
        sums_from = block, sums_ld = ldc;
      } else if (in_tiles && beta == 1.0f) {
        TileKind::load_edge(block, ldc, rows, cols, edge);
        sums_from = edge, sums_ld = kBlock;
      } else {
        tiles.zero();
      }
      const bool last_row = i + kBlock >= i1;  // the next block: (i + 32, j), else (i0, j + 32)
      const uint32_t* next_a =
          i0 + kBlock < i1 ? ops.a + (last_row ? i0 : i + kBlock) * ops.a_row + p0 : nullptr;
      const uint32_t* next_panel =
          last_row && j + kBlock < n ? ops.panel(j / kBlock + 1, p0) : nullptr;
      tiles.multiply(ops.a + i * ops.a_row + p0, ops.a_row, panel, ops.panel_ld(), p1 - p0,
                     next_a, next_panel, sums_from, sums_ld);
      if (in_tiles && whole) {
        if (ops.stream_c)
          tiles.store_streaming(block, ldc, edge);
        else
          tiles.store(block, ldc);
        continue;
      }
      tiles.store(edge, kBlock);
      TileKind::store_edge(edge, rows, cols, !in_tiles, alpha, beta, start ? start + j : nullptr,
                           block, ldc);
    }
  }
}

}  // namespace

__attribute__((target("amx-tile"))) void bf16_rows_amx(const Bf16Operands& ops, int64_t i0,
                                                       int64_t i1, int64_t n, int64_t p0,
                                                       int64_t p1, float alpha, float beta,
                                                       const float* start, float* c, int64_t ldc) {
  static const TileConfig config;
  _tile_loadconfig(&config);
  Tiles tiles;
  rows_of_blocks(tiles, ops, i0, i1, n, p0, p1, alpha, beta, start, c, ldc);
  _tile_release();
  if (ops.stream_c) _mm_sfence();  // the streamed blocks ordered before what follows
}

void bf16_rows_amx_model(const Bf16Operands& ops, int64_t i0, int64_t i1, int64_t n, int64_t p0,
                         int64_t p1, float alpha, float beta, const float* start, float* c,
                         int64_t ldc) {
  TilesModel tiles;
  rows_of_blocks(tiles, ops, i0, i1, n, p0, p1, alpha, beta, start, c, ldc);
}

}  // namespace vg::detail
