// Copies between a tensor seen as (outer, n, inner) and a block of it along the middle axis:
// slice and select read a block, cat writes one, and each backward does the reverse. The
// element type does not matter, so these move bytes (elem_size bytes per element).
#pragma once

#include <cstddef>
#include <cstdint>

namespace vg::kernels {

// dst (outer, n_dst, inner) receives block (outer, n_block, inner) at middle offset `offset`.
void place_block(const void* block, void* dst, int64_t outer, int64_t n_block, int64_t n_dst,
                 int64_t inner, int64_t offset, size_t elem_size);

// block (outer, n_block, inner) receives src (outer, n_src, inner) from middle offset `offset`.
void take_block(const void* src, void* block, int64_t outer, int64_t n_src, int64_t n_block,
                int64_t inner, int64_t offset, size_t elem_size);

// take_block as a plain loop over the block's elements: the same bytes.
void take_block_reference(const void* src, void* block, int64_t outer, int64_t n_src,
                          int64_t n_block, int64_t inner, int64_t offset, size_t elem_size);

}  // namespace vg::kernels
