// A kernel's scratch buffers: thread_local vectors grown to a shape's size the first time it
// comes and then reused, never shrunk, so that a training step allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vg::kernels {

// `buffer` (a std::vector or a CacheLineVector) with at least `size` elements.
template <class Buffer>
void grow(Buffer& buffer, int64_t size) {
  if (buffer.size() < size_t(size)) buffer.resize(size_t(size));
}

}  // namespace vg::kernels
