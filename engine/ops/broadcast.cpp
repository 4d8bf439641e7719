#include "engine/ops/broadcast.h"

namespace vg {

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    check(da == db || da == 1 || db == 1, op, ": shapes ", shape_str(a), " and ", shape_str(b),
          " do not broadcast (axis ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

static std::vector<int64_t> strides_in(const Shape& in, const Shape& out) {
  std::vector<int64_t> s(out.size(), 0);
  int64_t stride = 1;
  for (int64_t i = static_cast<int64_t>(in.size()) - 1; i >= 0; --i) {
    const size_t o = i + (out.size() - in.size());
    s[o] = in[i] == 1 ? 0 : stride;
    stride *= in[i];
  }
  return s;
}

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

}  // namespace vg
