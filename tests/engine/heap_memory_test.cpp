// keep_freed_heap_memory(): scratch that a step frees and allocates again comes back from
// memory the process holds, not from fresh pages the kernel must fault in and zero.
#include <doctest/doctest.h>

#include <vector>

#include "engine/core/storage.h"

namespace {

// A step's scratch, as a norm's statistics and a kernel's partial sums are: blocks of a few
// hundred KB, above glibc's first 128 KiB mapping threshold, written, then all freed.
void one_round_of_scratch() {
  std::vector<std::vector<double>> blocks;
  blocks.reserve(16);
  for (int i = 0; i < 16; ++i) blocks.emplace_back(50000, 1.0);
}

}  // namespace

TEST_CASE("freed scratch is touched again without page faults once the heap keeps it") {
  vg::keep_freed_heap_memory();
  one_round_of_scratch();  // the first round takes its pages from the OS
  const int64_t before = vg::page_faults_so_far();
  for (int round = 0; round < 4; ++round) one_round_of_scratch();
  const int64_t faults = vg::page_faults_so_far() - before;
#if defined(__SANITIZE_ADDRESS__)
  (void)faults;  // AddressSanitizer's allocator keeps freed blocks in its own quarantine
#else
  // Given back when freed, the 4 rounds' 6.4 MB each would fault in about 6,250 pages.
  CHECK(faults < 64);
#endif
}

TEST_CASE("page_faults_so_far counts the pages a new mapping touches") {
  const int64_t before = vg::page_faults_so_far();
  { std::vector<char> block(40 << 20, char(1)); }  // 40 MB: mapped whole, past 32 MiB
  CHECK(vg::page_faults_so_far() - before >= (40 << 20) / (2 << 20));  // even in 2 MiB pages
}
