// The copy behind permute: dst = src with its axes reordered.
#pragma once

#include <cstdint>
#include <vector>

namespace vg::kernels {

// dst[j...] = src[i...] where dst's axis k is src's axis order[k]; src has `shape`.
// dst is filled in runs along its last axis, the runs spread over the threads.
template <class T>
void permute_copy(const T* src, const std::vector<int64_t>& shape,
                  const std::vector<int64_t>& order, T* dst);

}  // namespace vg::kernels
