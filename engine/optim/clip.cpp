#include "engine/optim/clip.h"

#include <cmath>

#include "engine/kernels/optim_sums.h"

namespace vg::optim {

double grad_norm(const ParameterList& params) {
  double sum_sq = 0;
  for (const Parameter& p : params)
    if (Tensor g = p.tensor.grad(); g.defined()) sum_sq += sum_of_squares(g);
  return std::sqrt(sum_sq);
}

double clip_grad_norm(const ParameterList& params, double max_norm) {
  const double total = grad_norm(params);
  if (!(max_norm > 0) || !std::isfinite(total)) return total;
  const double coef = max_norm / (total + 1e-6);
  if (coef >= 1.0) return total;  // PyTorch multiplies by the clamped 1.0: no change
  for (const Parameter& p : params) {
    Tensor g = p.tensor.grad();
    if (!g.defined()) continue;
    dispatch(g.dtype(), [&](auto z) {
      using T = decltype(z);
      T* d = g.data<T>();
      const T c = T(coef);
      parallel_for(g.numel(), 1 << 14, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) d[i] = d[i] * c;
      });
    });
  }
  return total;
}

}  // namespace vg::optim
