// How a binary op walks two operands broadcast (NumPy rules) to one output: the output in
// contiguous runs, each operand advancing by 0 or 1 per element along a run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/core/parallel.h"
#include "engine/core/tensor.h"

namespace vg::kernels {

// The operands' element strides seen from the output's index space, after merging axes that
// can be walked as one. `out` has the merged sizes, `sa`/`sb` the strides (0: broadcast).
struct BroadcastPlan {
  Shape out;
  std::vector<int64_t> sa, sb;
};

// The plan for operands of shapes a and b broadcast to `out` (already checked to fit).
BroadcastPlan plan_broadcast(const Shape& a, const Shape& b, const Shape& out);

// Calls f(o, ia, ib, n, step_a, step_b) for runs of n output elements that start at output
// offset o and operand offsets ia, ib, and advance by step_a, step_b (0 or 1) per element.
// Runs are spread over the threads.
template <class F>
void for_each_broadcast_run(const BroadcastPlan& p, F&& f) {
  const int64_t rank = static_cast<int64_t>(p.out.size());
  if (rank == 0) {
    f(int64_t{0}, int64_t{0}, int64_t{0}, int64_t{1}, int64_t{0}, int64_t{0});
    return;
  }
  const int64_t inner = p.out[rank - 1];
  const int64_t runs = shape_numel(p.out) / (inner ? inner : 1);
  if (inner == 0 || runs == 0) return;
  const int64_t grain = std::max<int64_t>(1, (1 << 15) / inner);
  parallel_for(runs, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t rest = r, ia = 0, ib = 0;
      for (int64_t ax = rank - 2; ax >= 0; --ax) {
        const int64_t idx = rest % p.out[ax];
        rest /= p.out[ax];
        ia += idx * p.sa[ax];
        ib += idx * p.sb[ax];
      }
      f(r * inner, ia, ib, inner, p.sa[rank - 1], p.sb[rank - 1]);
    }
  });
}

}  // namespace vg::kernels
