// The maps a fused linear applies to its input (ops/fused_linear_map.h), and the ops made of
// them: scaled_linear (no map), gelu_linear, layer_norm_linear, affine_linear and
// gelu_grn_linear. Each map brings its own value and gradient code (ops/norm_parts.h,
// kernels/gelu_math.h), so a fused op has the bits of the op-by-op graph; what the fusion
// keeps and makes again is said at the head of ops/fused_linear.cpp.

#include <algorithm>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/kernels/bf16_gemm.h"
#include "engine/kernels/gelu_math.h"
#include "engine/kernels/gelu_slope.h"
#include "engine/kernels/made_rows.h"
#include "engine/ops/fused_linear_map.h"
#include "engine/ops/norm_parts.h"
#include "engine/ops/ops.h"

namespace vg {

using detail::fused_linear;
using detail::InputMap;
using detail::MapState;

namespace {

// The FLOPs of GELU's values over h, as the gelu op counts them.
void add_gelu_flops(const Tensor& h, GeluApprox approx) {
  add_flops(double(h.numel()) *
            (approx == GeluApprox::none ? gelu_math::kErfFlops : gelu_math::kTanhFlops));
}

// gelu(h) with the gelu op's bits, and into `slope` gelu'(h), in one pass: the erf form
// shares Phi(h) between the two.
Tensor gelu_with_slope(const Tensor& h, GeluApprox approx, Tensor& slope) {
  Tensor a = Tensor::empty(h.shape(), h.dtype());
  slope = Tensor::empty(h.shape(), h.dtype());
  dispatch(h.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::gelu_with_slope(h.data<T>(), a.data<T>(), slope.data<T>(), h.numel(),
                             approx != GeluApprox::none);
  });
  add_gelu_flops(h, approx);
  return a;
}

// gelu(h), and in backward its slope too (gelu_math.h, as the gelu op computes them).
InputMap gelu_map(GeluApprox approx) {
  InputMap m;
  m.values = [approx](const Tensor& h, MapState& state) {
    return state.for_backward ? gelu_with_slope(h, approx, state.slope) : gelu(h, approx);
  };
  m.grads = [approx](const Tensor& h, const MapState& state, const Tensor& da,
                     const std::vector<bool>& need) {
    if (!need[0]) return std::vector<Tensor>{Tensor()};
    Tensor slope = state.slope;
    if (!slope.defined()) gelu_with_slope(h, approx, slope);
    Tensor dh = da;  // dh = da * gelu'(h), in da's memory
    dispatch(dh.dtype(), [&](auto z) {
      using T = decltype(z);
      kernels::multiply_by_slope(dh.data<T>(), slope.data<T>(), dh.numel());
    });
    return std::vector<Tensor>{dh};
  };
  m.values_and_grads = [approx](const Tensor& h, const Tensor& da, const std::vector<bool>& need,
                                Tensor& a, Bf16Rows* rounded) {
    Tensor dh = da;  // dh = da * gelu'(h), in da's memory
    const bool tanh_form = approx != GeluApprox::none;
    if (rounded) {
      const int64_t cols = h.size(-1), rows = h.numel() / std::max<int64_t>(cols, 1);
      *rounded = make_bf16_rows(rows, cols, /*row_pairs=*/true);
      kernels::gelu_with_grad_bf16(h.data<float>(), rounded->words(), dh.data<float>(), rows, cols,
                                   tanh_form);
    } else {
      a = Tensor::empty(h.shape(), h.dtype());
      dispatch(h.dtype(), [&](auto z) {
        using T = decltype(z);
        kernels::gelu_with_grad(h.data<T>(), a.data<T>(), dh.data<T>(), h.numel(), tanh_form);
      });
    }
    add_gelu_flops(h, approx);
    return std::vector<Tensor>{need[0] ? dh : Tensor()};
  };
  m.grads_by_rows = [approx](const Tensor& h, Tensor& dh, Tensor& a, Bf16Rows* rounded) {
    const int64_t cols = h.size(-1), rows = h.numel() / std::max<int64_t>(cols, 1);
    const bool tanh_form = approx != GeluApprox::none;
    const float* x = h.data<float>();
    float* d = dh.data<float>();
    add_gelu_flops(h, approx);
    if (rounded) {
      uint32_t* words = rounded->words();
      return RowsDone([=](int64_t r0, int64_t r1, const float* da_rows) {
        kernels::gelu_with_grad_bf16_rows(x, da_rows, d, words, r0, r1, rows, cols, tanh_form);
      });
    }
    float* values = a.data<float>();
    return RowsDone([=](int64_t r0, int64_t r1, const float* da_rows) {
      kernels::gelu_with_grad_rows(x, da_rows, d, values, r0, r1, cols, tanh_form);
    });
  };
  m.made_values = [approx](const Tensor& h,
                           MapState&) {  // h outlives the rows: the forward holds it
    const float* x = h.data<float>();
    const int64_t cols = h.size(-1);
    const bool tanh_form = approx != GeluApprox::none;
    add_gelu_flops(h, approx);
    return MadeRows{h.numel() / cols, cols,
                    [=](int64_t r0, int64_t r1, int64_t c0, int64_t c1, float* out) {
                      for (int64_t r = r0; r < r1; ++r)
                        kernels::gelu_block<float>(x + r * cols + c0, out + (r - r0) * (c1 - c0),
                                                   nullptr, c1 - c0, tanh_form);
                    }};
  };
  return m;
}

}  // namespace

Tensor scaled_linear(const Tensor& x, const Tensor& weight, const Tensor& bias,
                     const Tensor& out_scale, const Tensor& residual) {
  check(out_scale.defined(), "scaled_linear: undefined out_scale");
  return fused_linear("scaled_linear", "x", x, nullptr, weight, bias, out_scale, residual);
}

Tensor gelu_linear(const Tensor& h, const Tensor& weight, const Tensor& bias, GeluApprox approx,
                   const Tensor& out_scale, const Tensor& residual) {
  const InputMap m = gelu_map(approx);
  return fused_linear("gelu_linear", "h", h, &m, weight, bias, out_scale, residual);
}

Tensor layer_norm_linear(const Tensor& x, const Tensor& norm_weight, const Tensor& norm_bias,
                         double eps, const Tensor& weight, const Tensor& bias) {
  InputMap m;
  m.params = {norm_weight, norm_bias};
  const Tensor nw = norm_weight.defined() ? norm_weight.detach() : Tensor();
  const Tensor nb = norm_bias.defined() ? norm_bias.detach() : Tensor();
  m.values = [=](const Tensor& x, MapState& state) {
    return detail::layer_norm_values(x, nw, nb, eps, state.stats);
  };
  m.grads = [=](const Tensor& x, const MapState& state, const Tensor& da,
                const std::vector<bool>& need) {
    // x's gradient from the block's residual, which comes first, gets dx added in the pass.
    const Tensor received = need[0] ? take_received_grad(0, x.shape(), da.dtype()) : Tensor();
    return detail::layer_norm_grads(x, nw, state.stats, da, need[0], need[1], need[2], received);
  };
  m.grads_from_forward_state = true;
  m.values_again = [=](const Tensor& x, const MapState& state) {
    return detail::layer_norm_values_again(x, nw, nb, state.stats);
  };
  m.made_values = [=](const Tensor& x, MapState& state) {
    return detail::layer_norm_made(x, nw, nb, eps, state.stats);
  };
  return fused_linear("layer_norm_linear", "x", x, &m, weight, bias, Tensor());
}

Tensor affine_linear(const Tensor& x, const Tensor& scale, const Tensor& shift,
                     const Tensor& weight, const Tensor& bias) {
  check(scale.defined(), "affine_linear: undefined scale");
  InputMap m;
  m.params = {scale, shift};
  const Tensor sc = scale.detach(), sh = shift.defined() ? shift.detach() : Tensor();
  m.values = [=](const Tensor& x, MapState&) { return detail::channel_affine_values(x, sc, sh); };
  m.grads = [=](const Tensor& x, const MapState&, const Tensor& da, const std::vector<bool>& need) {
    // x's gradient from the block's residual, which comes first, gets dx added in the pass.
    const Tensor received = need[0] ? take_received_grad(0, x.shape(), da.dtype()) : Tensor();
    return detail::channel_affine_grads(x, sc, da, need[0], need[1], need[2], received);
  };
  m.grads_from_forward_state = true;
  return fused_linear("affine_linear", "x", x, &m, weight, bias, Tensor());
}

// a = grn(gelu(h)): only h is kept. GELU and GRN are made one sample at a time, so GELU's
// values are read back from cache; backward makes them again with GELU's slope and GRN's
// gradient in the same pass over each sample (values_and_grads), so neither goes to memory.
// (values, rounded_values and grads serve a backward that needs dW or dh but not both.)
Tensor gelu_grn_linear(const Tensor& h, const Tensor& gamma, const Tensor& beta, double eps,
                       const Tensor& weight, const Tensor& bias, GeluApprox approx,
                       const Tensor& out_scale, const Tensor& residual) {
  check(gamma.defined() && beta.defined(), "gelu_grn_linear: undefined gamma or beta");
  InputMap m;
  m.params = {gamma, beta};
  const Tensor gm = gamma.detach(), bt = beta.detach();
  const bool tanh_form = approx != GeluApprox::none;
  m.values = [=](const Tensor& h, MapState& state) {
    const bool keep = state.for_backward;
    return detail::gelu_grn_values(h, tanh_form, gm, bt, eps, state.stats,
                                   keep ? &state.act : nullptr, keep ? &state.slope : nullptr);
  };
  m.rounded_values = [=](const Tensor& h, MapState& state, Bf16Rows& rounded) {
    const bool keep = state.for_backward;
    detail::gelu_grn_values(h, tanh_form, gm, bt, eps, state.stats, keep ? &state.act : nullptr,
                            keep ? &state.slope : nullptr, &rounded);
  };
  m.values_and_grads = [=](const Tensor& h, const Tensor& da, const std::vector<bool>& need,
                           Tensor& a, Bf16Rows* rounded) {
    return detail::gelu_grn_values_and_grads(h, tanh_form, gm, bt, eps, da, need, a, rounded);
  };
  m.grads = [=](const Tensor&, const MapState& state, const Tensor& da,
                const std::vector<bool>& need) {
    check(state.slope.defined(), "gelu_grn_linear: GELU's slope was not made for backward");
    return detail::grn_grads(state.act, gm, state.stats, da, need[0], need[1], need[2],
                             state.slope);
  };
  return fused_linear("gelu_grn_linear", "h", h, &m, weight, bias, out_scale, residual);
}

}  // namespace vg
