#include "engine/kernels/block_copy.h"

#include <doctest/doctest.h>

#include <vector>

using namespace vg;

// (outer 300, n 7, inner 50) with the block [2, 5) of the middle axis: many threads' shares.
TEST_CASE("take_block matches the plain loop and place_block puts the block back") {
  const int64_t outer = 300, n = 7, inner = 50, offset = 2, n_block = 3;
  std::vector<double> src(outer * n * inner);
  for (size_t i = 0; i < src.size(); ++i) src[i] = double(i);
  std::vector<double> block(outer * n_block * inner), block_ref(block.size());
  kernels::take_block(src.data(), block.data(), outer, n, n_block, inner, offset, sizeof(double));
  kernels::take_block_reference(src.data(), block_ref.data(), outer, n, n_block, inner, offset,
                                sizeof(double));
  CHECK(block == block_ref);
  CHECK(block[0] == double(offset * inner));  // outer 0, row 2, inner 0
  std::vector<double> back(src.size(), -1.0);
  kernels::place_block(block.data(), back.data(), outer, n_block, n, inner, offset, sizeof(double));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t m = 0; m < n; ++m)
      for (int64_t i = 0; i < inner; i += 7) {
        const int64_t at = (o * n + m) * inner + i;
        const bool inside = m >= offset && m < offset + n_block;
        INFO("outer ", o, ", row ", m, ", inner ", i);
        REQUIRE(back[at] == (inside ? src[at] : -1.0));
      }
}
