#include "engine/core/storage.h"

#include <sys/resource.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

#include "engine/core/error.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace vg {
namespace {

constexpr size_t kAlign = 64;

struct Cache {
  std::mutex mutex;
  std::multimap<size_t, void*> free_buffers;  // keyed by rounded size
  MemoryStats stats;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: tensors may outlive static destructors
  return *c;
}

size_t round_up(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

}  // namespace

Storage::Storage(size_t bytes) : data_(nullptr), bytes_(bytes) {
  const size_t rounded = round_up(bytes == 0 ? 1 : bytes);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.free_buffers.find(rounded);
    if (it != c.free_buffers.end()) {
      data_ = it->second;
      c.free_buffers.erase(it);
      c.stats.cache_hits++;
      c.stats.bytes_cached -= rounded;
    } else {
      c.stats.heap_allocations++;
    }
    c.stats.bytes_in_use += rounded;
    if (c.stats.bytes_in_use > c.stats.peak_bytes_in_use)
      c.stats.peak_bytes_in_use = c.stats.bytes_in_use;
  }
  if (!data_) {
    data_ = std::aligned_alloc(kAlign, rounded);
    if (!data_) throw Error(cat_str("out of memory: could not allocate ", rounded, " bytes"));
  }
}

Storage::~Storage() {
  const size_t rounded = round_up(bytes_ == 0 ? 1 : bytes_);
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.free_buffers.emplace(rounded, data_);
  c.stats.bytes_in_use -= rounded;
  c.stats.bytes_cached += rounded;
}

MemoryStats memory_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.stats;
}

void reset_peak_memory() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.stats.peak_bytes_in_use = c.stats.bytes_in_use;
}

void release_cached_memory() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (auto& [size, ptr] : c.free_buffers) std::free(ptr);
  c.free_buffers.clear();
  c.stats.bytes_cached = 0;
#ifdef __GLIBC__
  malloc_trim(0);  // the heap's free memory too, which keep_freed_heap_memory() would keep
#endif
}

void keep_freed_heap_memory() {
#ifdef __GLIBC__
  // 32 MiB is the largest threshold glibc takes on 64-bit; setting it fixes it there (glibc
  // otherwise moves it to the size of each mapped block freed). -1 turns trimming off.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, -1);
#endif
}

int64_t page_faults_so_far() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

}  // namespace vg
