// softmax and log_softmax over the last axis. Both save their output (not the input): the
// backward needs only y. The row loops are kernels/softmax_rows.h.
#include "engine/autograd/autograd.h"
#include "engine/kernels/softmax_rows.h"
#include "engine/ops/ops.h"

namespace vg {
namespace {

// softmax:     y = exp(x - max) / sum exp(x - max)        dx = y * (dy - sum(dy * y))
// log_softmax: y = x - max - log(sum exp(x - max))        dx = dy - exp(y) * sum(dy)
Tensor softmax_op(const char* op, const Tensor& a, bool log) {
  check(a.defined(), op, ": undefined input");
  check(a.dim() >= 1, op, ": input needs at least one axis, got shape ", a.shape());
  const int64_t C = a.size(-1), rows = C > 0 ? a.numel() / C : 0;
  Tensor y = Tensor::empty(a.shape(), a.dtype());
  if (C > 0) {
    dispatch(a.dtype(), [&](auto z) {
      using T = decltype(z);
      kernels::softmax_rows(a.data<T>(), y.data<T>(), rows, C, log);
    });
  }
  add_flops(5.0 * double(a.numel()));  // max, subtract, exp, sum, scale
  if (!any_requires_grad({a})) return record(op, y, {a}, nullptr);
  Tensor ys = y.detach();
  return record(op, y, {a}, [ys, rows, C, log](const Tensor& g) {
    Tensor dx = Tensor::empty(g.shape(), g.dtype());
    dispatch(g.dtype(), [&](auto z) {
      using T = decltype(z);
      kernels::softmax_backward_rows(ys.data<T>(), g.data<T>(), dx.data<T>(), rows, C, log);
    });
    return std::vector<Tensor>{dx};
  });
}

}  // namespace

Tensor softmax(const Tensor& a) {
  return softmax_op("softmax", a, false);
}
Tensor log_softmax(const Tensor& a) {
  return softmax_op("log_softmax", a, true);
}

}  // namespace vg
