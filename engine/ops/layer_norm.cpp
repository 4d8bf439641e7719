// layer_norm over the last axis: y = (x - mean) / sqrt(var + eps) * weight + bias.
// Saved for backward: only (mean, rstd) per row, in double, besides x and the weight; x-hat
// is recomputed, which costs less than storing a second activation. The row loops and the
// blocked parameter sums are kernels/layer_norm_rows.h.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/kernels/layer_norm_rows.h"
#include "engine/ops/norm_parts.h"
#include "engine/ops/ops.h"

namespace vg {
namespace {

bool needs_grad(const Tensor& t) {
  return t.defined() && (t.requires_grad() || t.grad_fn());
}

void check_layer_norm_param(const Tensor& p, const char* what, const Tensor& x, int64_t C) {
  if (!p.defined()) return;
  check(p.dim() == 1 && p.size(0) == C, "layer_norm: ", what, " has shape ", p.shape(),
        ", expected [", C, "] (input shape ", x.shape(), ")");
  check(p.dtype() == x.dtype(), "layer_norm: ", what, " is ", dtype_name(p.dtype()), ", input is ",
        dtype_name(x.dtype()));
}

template <class T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}
template <class T>
T* data_or_null(Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

// The checks of layer_norm's operands; its rows.
int64_t check_layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  check(x.defined(), "layer_norm: undefined input");
  check(x.dim() >= 1, "layer_norm: input needs at least one axis, got shape ", x.shape());
  const int64_t C = x.size(-1);
  check_layer_norm_param(weight, "weight", x, C);
  check_layer_norm_param(bias, "bias", x, C);
  check(eps >= 0 && std::isfinite(eps), "layer_norm: eps must be finite and >= 0, got ", eps);
  check(C > 0, "layer_norm: last axis is empty (input shape ", x.shape(), ")");
  return x.numel() / C;
}

// mean 1, centred squares 3, normalise 2, then 1 each for the weight and the bias
void add_layer_norm_flops(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  add_flops(double(x.numel()) * (6 + weight.defined() + bias.defined()));
}

}  // namespace

namespace detail {

Tensor layer_norm_values(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                         std::vector<double>& stats) {
  const int64_t rows = check_layer_norm(x, weight, bias, eps), C = x.size(-1);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  stats.resize(2 * rows);
  dispatch(x.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::layer_norm_rows(x.data<T>(), data_or_null<T>(weight), data_or_null<T>(bias), eps,
                             y.data<T>(), stats.data(), rows, C);
  });
  add_layer_norm_flops(x, weight, bias);
  return y;
}

MadeRows layer_norm_made(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                         std::vector<double>& stats) {
  const int64_t rows = check_layer_norm(x, weight, bias, eps), C = x.size(-1);
  check(x.dtype() == DType::f32, "layer_norm: rows made on demand are float32, input is ",
        dtype_name(x.dtype()));
  stats.resize(2 * rows);
  add_layer_norm_flops(x, weight, bias);
  const float *xp = x.data<float>(), *w = data_or_null<float>(weight),
              *b = data_or_null<float>(bias);
  double* row_stats = stats.data();
  return MadeRows{
      rows, C, [=](int64_t r0, int64_t r1, int64_t c0, int64_t c1, float* out) {
        // Inside the product's parallel region: layer_norm_rows stays on this thread.
        auto rows_into = [&](float* y) {
          kernels::layer_norm_rows(xp + r0 * C, w, b, eps, y, row_stats + 2 * r0, r1 - r0, C);
        };
        if (c0 == 0 && c1 == C) return rows_into(out);
        thread_local std::vector<float> whole;  // rows whole, for some columns
        whole.resize((r1 - r0) * C);
        rows_into(whole.data());
        for (int64_t r = 0; r < r1 - r0; ++r)
          std::copy(whole.begin() + r * C + c0, whole.begin() + r * C + c1, out + r * (c1 - c0));
      }};
}

Tensor layer_norm_values_again(const Tensor& x, const Tensor& weight, const Tensor& bias,
                               const std::vector<double>& stats) {
  const int64_t C = x.size(-1), rows = C > 0 ? x.numel() / C : 0;
  check(int64_t(stats.size()) == 2 * rows, "layer_norm: ", stats.size() / 2, " rows' stats for ",
        rows, " rows (input shape ", x.shape(), ")");
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch(x.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::layer_norm_apply_rows(x.data<T>(), data_or_null<T>(weight), data_or_null<T>(bias),
                                   stats.data(), y.data<T>(), rows, C);
  });
  // normalise 2, then 1 each for the weight and the bias, as layer_norm_values counts them
  add_flops(double(x.numel()) * (2 + weight.defined() + bias.defined()));
  return y;
}

// g = dy * w; dx = rstd * (g - mean(g) - xhat * mean(g * xhat));
// dw = sum_rows dy * xhat; db = sum_rows dy. dx is added into `received` where that is
// defined.
std::vector<Tensor> layer_norm_grads(const Tensor& x, const Tensor& weight,
                                     const std::vector<double>& stats, const Tensor& g, bool need_x,
                                     bool need_weight, bool need_bias, const Tensor& received) {
  const int64_t C = x.size(-1), rows = C > 0 ? x.numel() / C : 0;
  const bool adds = need_x && received.defined();
  Tensor dx = adds ? received : need_x ? Tensor::empty(x.shape(), g.dtype()) : Tensor();
  Tensor dw = need_weight ? Tensor::empty({C}, g.dtype()) : Tensor();
  Tensor db = need_bias ? Tensor::empty({C}, g.dtype()) : Tensor();
  dispatch(g.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::layer_norm_backward_rows(x.data<T>(), data_or_null<T>(weight), stats.data(),
                                      g.data<T>(), data_or_null<T>(dx), data_or_null<T>(dw),
                                      data_or_null<T>(db), rows, C, adds);
  });
  return {dx, dw, db};
}

}  // namespace detail

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  auto stats = std::make_shared<std::vector<double>>();
  Tensor y = detail::layer_norm_values(x, weight, bias, eps, *stats);
  if (!any_requires_grad({x, weight, bias})) return record("layer_norm", y, {x}, nullptr);
  const bool need_x = needs_grad(x), need_w = needs_grad(weight), need_b = needs_grad(bias);
  Tensor xs = x.detach(), ws = weight.defined() ? weight.detach() : Tensor();
  return record("layer_norm", y, {x, weight, bias}, [=](const Tensor& g) {
    // x's gradient from a residual, if it came first, gets dx added in the same pass.
    const Tensor received = need_x ? take_received_grad(0, xs.shape(), g.dtype()) : Tensor();
    return detail::layer_norm_grads(xs, ws, *stats, g, need_x, need_w, need_b, received);
  });
}

}  // namespace vg
