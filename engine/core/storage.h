// Tensor memory: 64-byte aligned buffers that go back to a cache, not to the OS, when freed.
//
// A training step asks for the same buffer sizes every time, so after the first step almost
// every allocation is served from the cache (an exact-size free list). That keeps activation
// memory off the heap and out of page faults; `memory_stats()` lets tests and benchmarks see it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace vg {

class Storage {
 public:
  explicit Storage(size_t bytes);  // uninitialised, 64-byte aligned
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void* data_;
  size_t bytes_;
};

struct MemoryStats {
  int64_t heap_allocations = 0;  // buffers that had to come from the OS since start
  int64_t cache_hits = 0;        // buffers served from the cache
  int64_t bytes_in_use = 0;      // held by live tensors
  int64_t peak_bytes_in_use = 0;
  int64_t bytes_cached = 0;      // freed, kept for reuse
};

MemoryStats memory_stats();
// Starts peak_bytes_in_use again from bytes_in_use: the peak of one part of a run from here.
void reset_peak_memory();
// Returns every cached buffer, and the C library's free heap, to the OS.
void release_cached_memory();

// Asks the C library (glibc) to keep the memory that other buffers free, not only tensors':
// blocks under 32 MiB come from its heap instead of their own mappings, and the heap's free
// top is not given back to the OS. Without it, the scratch a step allocates and frees (a norm's
// statistics, a kernel's partial sums of a few hundred KB) is handed back when freed and
// faulted in again, page by page and zeroed, the next time: about 12,700 page faults a step at
// dim 192 depth 36 with GRN. The `vitgrad` command calls it first; a program of its own may.
// Changes no result. Does nothing with another C library.
void keep_freed_heap_memory();

// Minor page faults of this process so far (getrusage): memory touched for the first time.
int64_t page_faults_so_far();

}  // namespace vg
