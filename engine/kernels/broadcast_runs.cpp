#include "engine/kernels/broadcast_runs.h"

namespace vg::kernels {
namespace {

std::vector<int64_t> strides_in(const Shape& in, const Shape& out) {
  std::vector<int64_t> s(out.size(), 0);
  int64_t stride = 1;
  for (int64_t i = static_cast<int64_t>(in.size()) - 1; i >= 0; --i) {
    const size_t o = i + (out.size() - in.size());
    s[o] = in[i] == 1 ? 0 : stride;
    stride *= in[i];
  }
  return s;
}

}  // namespace

BroadcastPlan plan_broadcast(const Shape& a, const Shape& b, const Shape& out) {
  const std::vector<int64_t> sa = strides_in(a, out), sb = strides_in(b, out);
  BroadcastPlan p;
  // Merge axis i into the axis before it when both operands walk them as one.
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 1) continue;  // size-1 axes add nothing
    if (!p.out.empty()) {
      const size_t j = p.out.size() - 1;
      if (p.sa[j] == sa[i] * out[i] && p.sb[j] == sb[i] * out[i]) {
        p.out[j] *= out[i];
        p.sa[j] = sa[i];
        p.sb[j] = sb[i];
        continue;
      }
    }
    p.out.push_back(out[i]);
    p.sa.push_back(sa[i]);
    p.sb.push_back(sb[i]);
  }
  return p;
}

}  // namespace vg::kernels
