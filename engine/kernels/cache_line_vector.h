// std::vector whose memory starts on a cache line (64 bytes), for the packed operands of the
// matrix products. std::vector's own memory is only 16-byte aligned (a large block, which
// glibc takes from mmap behind a 16-byte header, always starts 16 bytes past a line), so each
// 64-byte row of a packed operand would straddle two lines and cost two loads: the AMX tile
// loops ran 2.3 times slower that way (Intel Xeon, family 6 model 207).
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace vg::kernels {

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kLine{64};
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t count) { return static_cast<T*>(::operator new(count * sizeof(T), kLine)); }
  void deallocate(T* p, size_t) { ::operator delete(p, kLine); }
  bool operator==(const CacheLineAllocator&) const { return true; }
};

template <class T>
using CacheLineVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace vg::kernels
