// Reductions over any set of axes. The kernels see the input as (outer, reduced, inner):
// the reduced axes, once size-1 axes are dropped, must be adjacent; otherwise they are
// first permuted to the end (a copy). Sums accumulate in double, in a fixed order
// (kernels/axis_sums.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/core/parallel.h"
#include "engine/kernels/axis_max.h"
#include "engine/kernels/axis_sums.h"
#include "engine/ops/ops.h"

namespace vg {
namespace {

struct ReducePlan {
  std::vector<bool> reduced;  // per input axis
  Shape kept_shape;           // keepdim=true shape
  Shape out_shape;            // the shape of the result
  int64_t count = 1;          // elements reduced into each output
};

ReducePlan plan_reduce(const char* op, const Tensor& a, const Axes& axes, bool keepdim) {
  const int64_t rank = a.dim();
  ReducePlan p;
  p.reduced.assign(rank, axes.empty());
  for (int64_t ax : axes) {
    check(ax >= -rank && ax < rank, op, ": axis ", ax, " out of range for shape ", a.shape());
    const int64_t k = ax < 0 ? ax + rank : ax;
    check(!p.reduced[k], op, ": axis ", ax, " given twice");
    p.reduced[k] = true;
  }
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = a.shape()[i];
    p.kept_shape.push_back(p.reduced[i] ? 1 : d);
    if (p.reduced[i])
      p.count *= d;
    else
      p.out_shape.push_back(d);
    if (p.reduced[i] && keepdim) p.out_shape.push_back(1);
  }
  return p;
}

// Input viewed as (outer, reduced, inner), or nothing if the reduced axes are not adjacent.
struct Span3 {
  int64_t outer = 1, reduced = 1, inner = 1;
};
bool as_span3(const Shape& shape, const std::vector<bool>& reduced, Span3& s) {
  return kernels::as_middle_axis(shape, reduced, s.outer, s.reduced, s.inner);
}

// Brings the reduced axes to the end with a copy, so any reduction becomes (outer, reduced).
Tensor reduced_axes_last(const Tensor& a, const std::vector<bool>& reduced, Span3& s) {
  Axes order;
  for (size_t i = 0; i < reduced.size(); ++i)
    if (!reduced[i]) order.push_back(i);
  for (size_t i = 0; i < reduced.size(); ++i)
    if (reduced[i]) order.push_back(i);
  Tensor t = permute(a.detach(), order);
  s = Span3{};
  for (size_t i = 0; i < reduced.size(); ++i) (reduced[i] ? s.reduced : s.outer) *= a.shape()[i];
  return t;
}

Tensor sum_values(const Tensor& a, const ReducePlan& p) {
  Tensor out = Tensor::empty(p.out_shape, a.dtype());
  dispatch(a.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::sum_axes(a.data<T>(), a.shape(), p.reduced, out.data<T>());
  });
  add_flops(double(a.numel()));
  return out;
}

}  // namespace

Tensor sum(const Tensor& a, const Axes& axes, bool keepdim) {
  check(a.defined(), "sum: undefined tensor");
  const ReducePlan p = plan_reduce("sum", a, axes, keepdim);
  Tensor out = sum_values(a, p);
  const Shape in_shape = a.shape(), kept = p.kept_shape;
  // Every input element receives the gradient of the output it was summed into.
  return record("sum", out, {a}, [in_shape, kept](const Tensor& g) {
    return std::vector<Tensor>{broadcast_to(g.reshape(kept), in_shape)};
  });
}

Tensor mean(const Tensor& a, const Axes& axes, bool keepdim) {
  check(a.defined(), "mean: undefined tensor");
  const ReducePlan p = plan_reduce("mean", a, axes, keepdim);
  check(p.count > 0, "mean: no elements to average over in shape ", a.shape());
  return mul(sum(a, axes, keepdim), 1.0 / double(p.count));
}

Tensor var(const Tensor& a, const Axes& axes, bool keepdim) {
  // Two passes (mean, then squared deviations) to avoid the cancellation of E[x^2]-E[x]^2.
  const Tensor centred = sub(a, mean(a, axes, true));
  return mean(mul(centred, centred), axes, keepdim);
}

Tensor max(const Tensor& a, const Axes& axes, bool keepdim) {
  check(a.defined(), "max: undefined tensor");
  const ReducePlan p = plan_reduce("max", a, axes, keepdim);
  check(p.count > 0, "max: no elements to take the maximum of in shape ", a.shape());
  Span3 s;
  Tensor src = a;
  const bool adjacent = as_span3(a.shape(), p.reduced, s);
  if (!adjacent) src = reduced_axes_last(a, p.reduced, s);
  Tensor out = Tensor::empty(p.out_shape, a.dtype());
  // Where each maximum came from (first one on ties), as an index into src.
  auto where = std::make_shared<std::vector<int64_t>>(out.numel());
  dispatch(a.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::max_middle_axis(src.data<T>(), out.data<T>(), where->data(), s.outer, s.reduced,
                             s.inner);
  });
  add_flops(double(a.numel()));
  const Shape in_shape = a.shape(), src_shape = src.shape();
  std::vector<bool> reduced = p.reduced;
  return record("max", out, {a}, [=](const Tensor& g) {
    Tensor gs = zeros(src_shape, g.dtype());
    dispatch(g.dtype(), [&](auto z) {
      using T = decltype(z);
      for (int64_t k = 0; k < g.numel(); ++k) gs.data<T>()[(*where)[k]] = g.data<T>()[k];
    });
    if (adjacent) return std::vector<Tensor>{gs};
    // Undo the permutation that moved the reduced axes last.
    Axes order, inverse(reduced.size());
    for (size_t i = 0; i < reduced.size(); ++i)
      if (!reduced[i]) order.push_back(i);
    for (size_t i = 0; i < reduced.size(); ++i)
      if (reduced[i]) order.push_back(i);
    for (size_t i = 0; i < order.size(); ++i) inverse[order[i]] = i;
    return std::vector<Tensor>{permute(gs, inverse)};
  });
}

Tensor sum_to_shape(const Tensor& a, const Shape& shape) {
  if (a.shape() == shape) return a;
  const int64_t extra = a.dim() - static_cast<int64_t>(shape.size());
  check(extra >= 0, "sum_to_shape: cannot sum ", a.shape(), " to the larger rank ", shape);
  Axes axes;
  for (int64_t i = 0; i < a.dim(); ++i) {
    if (i < extra) {
      axes.push_back(i);
      continue;
    }
    const int64_t want = shape[i - extra];
    check(want == a.shape()[i] || want == 1, "sum_to_shape: ", a.shape(),
          " does not broadcast from ", shape);
    if (want == 1 && a.shape()[i] != 1) axes.push_back(i);
  }
  if (axes.empty()) return a.reshape(shape);
  return sum(a, axes, false).reshape(shape);
}

}  // namespace vg
