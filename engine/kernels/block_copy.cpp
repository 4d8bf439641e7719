#include "engine/kernels/block_copy.h"

#include <algorithm>
#include <cstring>

#include "engine/core/parallel.h"

namespace vg::kernels {
namespace {

// One contiguous run of n_block * inner elements per outer index; threads split the outer
// indices so that each gets about 16k elements.
void copy_runs(const char* s, char* d, int64_t outer, int64_t s_stride, int64_t s_offset,
               int64_t d_stride, int64_t d_offset, int64_t run, size_t elem) {
  parallel_for(outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(run, 1)),
               [&](int64_t o0, int64_t o1) {
                 for (int64_t o = o0; o < o1; ++o)
                   std::memcpy(d + (o * d_stride + d_offset) * elem,
                               s + (o * s_stride + s_offset) * elem, run * elem);
               });
}

}  // namespace

void place_block(const void* block, void* dst, int64_t outer, int64_t n_block, int64_t n_dst,
                 int64_t inner, int64_t offset, size_t elem_size) {
  copy_runs(static_cast<const char*>(block), static_cast<char*>(dst), outer, n_block * inner, 0,
            n_dst * inner, offset * inner, n_block * inner, elem_size);
}

void take_block(const void* src, void* block, int64_t outer, int64_t n_src, int64_t n_block,
                int64_t inner, int64_t offset, size_t elem_size) {
  copy_runs(static_cast<const char*>(src), static_cast<char*>(block), outer, n_src * inner,
            offset * inner, n_block * inner, 0, n_block * inner, elem_size);
}

void take_block_reference(const void* src, void* block, int64_t outer, int64_t n_src,
                          int64_t n_block, int64_t inner, int64_t offset, size_t elem_size) {
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(block);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t m = 0; m < n_block; ++m)
      for (int64_t i = 0; i < inner; ++i)
        for (size_t byte = 0; byte < elem_size; ++byte)
          d[((o * n_block + m) * inner + i) * elem_size + byte] =
              s[((o * n_src + offset + m) * inner + i) * elem_size + byte];
}

}  // namespace vg::kernels
