// dropout: element i is kept when the i-th draw rng.uniform() < 1 - p, drawing serially in
// element order (so a seed fixes the mask whatever the thread count); kept elements are
// scaled by 1/(1-p), so the expectation is unchanged.
#include "engine/autograd/autograd.h"
#include "engine/core/rng.h"
#include "engine/kernels/mul_arrays.h"
#include "engine/ops/ops.h"

namespace vg {

Tensor dropout(const Tensor& x, double p, Rng& rng, bool training) {
  check(x.defined(), "dropout: undefined input");
  check(p >= 0 && p < 1, "dropout: p must be in [0, 1), got ", p, " (input shape ", x.shape(), ")");
  if (!training || p == 0) return x;
  // Saved for backward: the mask as scale values (0 or 1/(1-p)), so dx = dy * mask.
  Tensor mask = Tensor::empty(x.shape(), x.dtype());
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  const double keep = 1 - p;
  dispatch(x.dtype(), [&](auto z) {
    using T = decltype(z);
    T* m = mask.data<T>();
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) m[i] = rng.uniform() < keep ? T(1 / keep) : T(0);
    kernels::mul_arrays(xp, m, yp, x.numel());
  });
  add_flops(double(x.numel()));
  return record("dropout", y, {x},
                [mask](const Tensor& g) { return std::vector<Tensor>{mul(g, mask)}; });
}

}  // namespace vg
