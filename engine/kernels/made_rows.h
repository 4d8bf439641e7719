// An operand of a product that is never stored whole: a convolution's columns, say, which
// repeat the image's values up to k x k times, or GELU's values as fc2's forward reads them;
// and a product's result that is never stored whole either, but handed on a block of rows at
// a time (RowsDone).
// The bf16 kernels ask for it a block of rows at a time and pack each block while it is still
// in cache (engine/kernels/bf16_gemm.h), and so do the float tiles, which read each block where
// it was made (engine/kernels/gemm_tiled_made.h).
// Stored, the columns of the `make run` stem's 32 -> 32 convolution are 29 MB, written once and
// read twice through memory every step.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/core/parallel.h"

namespace vg {

// A float matrix of `rows` x `cols`: fill(r0, r1, c0, c1, out) writes the block of its rows
// [r0, r1) and columns [c0, c1) into out, c1 - c0 floats a row. It may be called from several
// threads at once, for any block.
struct MadeRows {
  int64_t rows = 0, cols = 0;
  std::function<void(int64_t r0, int64_t r1, int64_t c0, int64_t c1, float* out)> fill;
};

// Takes rows [r0, r1) of a product's C once they are final, in `rows` (n floats a row), a block
// of the product's thread that stays in cache and is not C: the pass that reads C next, made
// before C would be written out and read back (GELU's gradient on the input gradient dY W: a
// float C of 19.7 MB a block at dim 192 never goes to memory). r0 is even, and so is r1 except
// at C's end; calls for disjoint rows may run at once, on the product's threads. The bf16
// forwards take one too (bf16_gemm.h `done`, or null): LayerScale's scale applied as their
// blocks are stored.
using RowsDone = std::function<void(int64_t r0, int64_t r1, const float* rows)>;

// The whole matrix, made on the engine's threads: for a product that reads it whole.
inline std::vector<float> made_whole(const MadeRows& made) {
  std::vector<float> whole(size_t(made.rows * made.cols));
  parallel_for(made.rows, 64, [&](int64_t r0, int64_t r1) {
    made.fill(r0, r1, 0, made.cols, whole.data() + r0 * made.cols);
  });
  return whole;
}

}  // namespace vg
