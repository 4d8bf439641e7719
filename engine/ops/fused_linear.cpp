// linear fused with its neighbours in a ViT block, to keep fewer activations for backward.
//
// Op by op, a linear keeps its input for dW, and the per-channel map that made that input
// (LayerNorm, LearnableScaler's affine, GELU, GRN) keeps its own input too: two tensors where
// one would do, since the map is cheap to run again. Each op here keeps only the map's input
// and recomputes the map's output in backward, with the map's own value and gradient code
// (ops/norm_parts.h, gelu_math.h), so its results have the bits of the op-by-op graph. In bf16
// mode, a map whose gradient needs only its statistics (LayerNorm, an affine) has its values
// kept instead, as dW's product reads them: rounded to bf16, half a float input's bytes, and
// backward makes nothing again (the same bits: they are the values backward would make); so
// has a linear without a map (scaled_linear), whose float input is then not held. GELU's
// values, which backward makes again, the bf16 forward's product makes a block of rows at a
// time as it packs them (kernels/made_rows.h): never stored, with the same bits; backward's
// pass writes them rounded to bf16, as dW's product reads them, and takes da = dy W a block of
// rows at a time from the product that makes it (kernels/bf16_gemm.h RowsDone): da is never
// stored either. GRN's output, which needs a whole sample's statistics before its first value,
// the bf16 forward writes rounded to bf16 as the product would pack it, half the floats'
// bytes, and the product takes those words as A.
//
// Optionally a per-channel scale s (LayerScale) follows the product: y = s * (a W^T + b).
// Op by op, LayerScale would keep the product for ds = sum_rows dy * (a W^T + b); here ds
// comes from G = dy^T a, which dW needs anyway:
//   ds_o = sum_i W_oi G_oi + b_o sum_rows dy_o,   dW = s * G,   db = s * sum_rows dy,
//   da = dy (s * W).
// The forward has the op-by-op bits; these gradients equal op-by-op ones up to rounding.
#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/kernels/bf16_gemm.h"
#include "engine/kernels/gelu_math.h"
#include "engine/kernels/gelu_slope.h"
#include "engine/kernels/row_scale.h"
#include "engine/ops/linear_parts.h"
#include "engine/ops/norm_parts.h"
#include "engine/ops/ops.h"

namespace vg {
namespace {

bool needs_grad(const Tensor& t) {
  return t.defined() && (t.requires_grad() || t.grad_fn());
}

// What a map's values leave for its gradient: per-row statistics and, when the values are
// made again in backward, GELU's slope gelu'(h) from the same pass (one erf per element
// instead of two) and GELU's output for GRN's gradient.
struct MapState {
  bool for_backward = false;
  std::vector<double> stats;
  Tensor slope, act;
};

// The map a fused linear applies to its input x. `values` computes a = f(x) and fills the
// state; `grads` maps da to {dx, one per param}.
struct InputMap {
  std::vector<Tensor> params;
  std::function<Tensor(const Tensor& x, MapState& state)> values;
  std::function<std::vector<Tensor>(const Tensor& x, const MapState& state, const Tensor& da,
                                    const std::vector<bool>& need)>
      grads;
  // Optional, for a map whose gradient pass can make its values too: a = f(x) into `a` and
  // {dx, one per param} from da, in one pass (GELU: one erf per element and no slope array).
  // Backward then makes da before the map's values. With `rounded` (bf16 mode), a goes into
  // it rounded to bf16 instead, as dW's product would round it: half the bytes written and
  // read back, and the same bits.
  std::function<std::vector<Tensor>(const Tensor& x, const Tensor& da,
                                    const std::vector<bool>& need, Tensor& a, Bf16Rows* rounded)>
      values_and_grads;
  // Optional, for a map of one element at a time without params (GELU), in bf16 mode:
  // values_and_grads as a pass that da's product hands each block of da's rows as it
  // finishes them (kernels/bf16_gemm.h RowsDone), writing dx and the values rounded into
  // `rounded` (by pairs of rows, made by the caller), with values_and_grads' bits. da is never
  // stored: at dim 192 its 19.7 MB of floats a block are not written out and read back.
  std::function<RowsDone(const Tensor& x, Tensor& dx, Bf16Rows& rounded)> grads_by_rows;
  // Whether `grads` needs only what `values` left in the forward (statistics), not the values
  // themselves: LayerNorm's and an affine's. In bf16 mode such a map's linear keeps its input
  // rounded to bf16 for dW, and backward makes nothing again.
  bool grads_from_forward_state = false;
  // Optional: `values` with the values rounded to bf16 by rows into `rounded` instead of a
  // tensor, as the products read them, for the forward and backward in bf16 mode (GRN: half
  // the bytes written and read back, and no packing of them; the same bits).
  std::function<void(const Tensor& x, MapState& state, Bf16Rows& rounded)> rounded_values;
  // Optional, for a map of one element at a time (GELU): its values as rows made on demand
  // (kernels/made_rows.h), with the bits of `values`. Where the products make rows (bf16
  // mode), the forward's product makes a block of them as it packs it, so the map's output,
  // fc2's input of 4 x dim floats a token, is never written to memory and read back.
  std::function<MadeRows(const Tensor& x)> made_values;
};

// What a fused linear's forward keeps for backward in bf16 mode, where its map allows it
// (InputMap::grads_from_forward_state): the map's values as dW's product reads them, and the
// map's statistics.
struct KeptForward {
  Bf16Rows input;
  MapState state;
};

// Row o of w (out, in) times s_o, into a new tensor: s * W, and s * G for dW.
Tensor scaled_weight(const Tensor& w, const Tensor& s) {
  Tensor out = Tensor::empty(w.shape(), w.dtype());
  dispatch(w.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::scale_rows(w.data<T>(), s.data<T>(), out.data<T>(), w.size(0), w.size(1));
  });
  return out;
}

// ds_o = sum_i W_oi G_oi + b_o col_o, in double.
Tensor scale_grad(const Tensor& w, const Tensor& G, const Tensor& b, const Tensor& col) {
  Tensor ds = Tensor::empty({w.size(0)}, w.dtype());
  dispatch(w.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::scale_grad_rows(w.data<T>(), G.data<T>(), b.defined() ? b.data<T>() : nullptr,
                             b.defined() ? col.data<T>() : nullptr, ds.data<T>(), w.size(0),
                             w.size(1));
  });
  return ds;
}

void check_residual(const char* op, const Tensor& r, const detail::LinearPlan& p,
                    const Tensor& w) {
  if (!r.defined()) return;
  check(r.shape() == p.out_shape, op, ": residual has shape ", r.shape(), ", expected ",
        p.out_shape, " (the output's)");
  check(r.dtype() == w.dtype(), op, ": residual is ", dtype_name(r.dtype()), ", weight is ",
        dtype_name(w.dtype()));
}

void check_out_scale(const char* op, const Tensor& s, const detail::LinearPlan& p,
                     const Tensor& w) {
  if (!s.defined()) return;
  check(s.dim() == 1 && s.size(0) == p.out_features, op, ": out_scale has shape ", s.shape(),
        ", expected [", p.out_features, "]");
  check(s.dtype() == w.dtype(), op, ": out_scale is ", dtype_name(s.dtype()), ", weight is ",
        dtype_name(w.dtype()));
}

// The forward's product on a = map(x) (a = x without a map): a made a block of rows at a time
// as the product packs it, or rounded to bf16 first, or stored; with `kept`, also a rounded to
// bf16 for dW, and the map's statistics. Every a made here is freed on return: the caller
// keeps only x (and, in bf16 mode, perhaps a as bf16). `after` (a scale, a residual) is done
// to the output, in bf16 mode as the product stores it (linear_parts.h).
Tensor forward_values(const Tensor& x, const InputMap* map, const Tensor& weight,
                      const Tensor& bias, const detail::AfterProduct& after,
                      const detail::LinearPlan& p, KeptForward* kept) {
  MapState state;
  const bool bf16_rows = !kept && x.dtype() == DType::f32 && x.numel() > 0 && products_make_rows();
  Tensor out;
  if (map && map->made_values && bf16_rows) {
    out = detail::linear_values_made(map->made_values(x.detach()), weight, bias, p, after);
  } else if (map && map->rounded_values && bf16_rows) {
    Bf16Rows rounded;  // the map's values as the product reads them: half the bytes
    map->rounded_values(x.detach(), state, rounded);
    out = detail::linear_values_rounded(rounded, weight, bias, p, after);
  } else {
    const Tensor a = map ? map->values(x.detach(), state) : x.detach();
    out = detail::linear_values(a, weight, bias, p, kept ? &kept->input : nullptr, after);
  }
  if (kept) kept->state = std::move(state);
  return out;
}

// fused_linear's backward: what it holds from the forward, and its three routes to the
// gradients, by what the forward left (`kept`) and what the map offers. The recorded inputs
// are x, the map's params, weight, bias, out_scale, residual: `need` says which want a gradient.
struct FusedLinearBackward {
  std::vector<bool> need;
  size_t n_map = 1;   // x and the map's params
  Tensor xs;          // x; undefined without a map where a kept input stands in for it
  Tensor ws, bs, ss;  // weight, bias, out_scale (the last two may be undefined)
  Shape x_shape;
  InputMap map;
  bool has_map = false;
  int64_t rows = 0, in_features = 0, out_features = 0;
  std::shared_ptr<KeptForward> kept;

  // One backward call's working state: dy as (rows, out), a gradient per input, and
  // col = sum_rows dy (db before the scale, and a term of ds), made with dW's product.
  struct Pass {
    Tensor dy;
    std::vector<Tensor> grads;
    Tensor col;
  };

  std::vector<Tensor> operator()(const Tensor& g) const {
    Pass pass{g.reshape({rows, out_features}), std::vector<Tensor>(need.size()), Tensor()};
    if (need[ib()] && !need_weight()) {
      pass.col = sum(pass.dy, {0});
      pass.grads[ib()] = scaled() ? pass.col * ss : pass.col;
    }
    if (need[ir()]) pass.grads[ir()] = g;  // as add's gradient: the output's
    if (kept)
      from_kept(pass);
    else if (has_map && map.values_and_grads && need_weight() && need_input())
      values_with_grads(pass);
    else
      values_made_again(pass);
    return std::move(pass.grads);
  }

 private:
  size_t iw() const { return n_map; }
  size_t ib() const { return n_map + 1; }
  size_t is() const { return n_map + 2; }
  size_t ir() const { return n_map + 3; }
  bool scaled() const { return ss.defined(); }
  bool need_weight() const { return need[iw()] || need[is()]; }
  bool need_col() const { return need[ib()] || (need[is()] && bs.defined()); }
  bool need_input() const {  // x or a param of the map
    return std::any_of(need.begin(), need.begin() + n_map, [](bool b) { return b; });
  }
  std::vector<bool> need_map() const { return {need.begin(), need.begin() + n_map}; }

  // da = dy (s * W)
  Tensor input_grad(const Pass& pass) const {
    return matmul(pass.dy, scaled() ? scaled_weight(ws, ss) : ws).reshape(x_shape);
  }
  // db, ds and dW from G = dy^T a, with col taken in the same pass.
  void grads_from(Pass& pass, const Tensor& G) const {
    if (need[ib()]) pass.grads[ib()] = scaled() ? pass.col * ss : pass.col;
    if (need[is()]) pass.grads[is()] = scale_grad(ws, G, bs, pass.col);
    if (need[iw()]) pass.grads[iw()] = scaled() ? scaled_weight(G, ss) : G;
  }
  void weight_grads(Pass& pass, const Tensor& a) const {
    grads_from(pass, detail::weight_product(pass.dy, a.reshape({rows, in_features}),
                                            need_col() ? &pass.col : nullptr));
  }
  void weight_grads(Pass& pass, const Bf16Rows& a) const {  // a as dW's product reads it
    grads_from(pass, detail::weight_product(pass.dy, a, need_col() ? &pass.col : nullptr));
  }
  void set_map_grads(Pass& pass, const std::vector<Tensor>& dmap) const {
    for (size_t i = 0; i < n_map; ++i) pass.grads[i] = dmap[i];
  }

  // a as the forward rounded it, and the map's statistics: nothing made again.
  void from_kept(Pass& pass) const {
    if (need_weight()) weight_grads(pass, kept->input);
    if (need_input() && !has_map)
      pass.grads[0] = input_grad(pass);
    else if (need_input())
      set_map_grads(pass, map.grads(xs, kept->state, input_grad(pass), need_map()));
  }

  // The map's values made by the pass that makes its gradient (GELU), rounded to bf16 in bf16
  // mode as dW's product reads them; there, where the map offers it, on each block of da's
  // rows as the product finishes it.
  void values_with_grads(Pass& pass) const {
    Tensor a;
    Bf16Rows rounded;
    const bool round = detail::keeps_bf16_input(xs);
    if (round && map.grads_by_rows) return grads_in_product(pass);
    const std::vector<Tensor> dmap =
        map.values_and_grads(xs, input_grad(pass), need_map(), a, round ? &rounded : nullptr);
    if (round)
      weight_grads(pass, rounded);
    else
      weight_grads(pass, a);
    set_map_grads(pass, dmap);
  }

  // The same with the map's pass run on each block of da's rows as its product finishes them.
  void grads_in_product(Pass& pass) const {
    Bf16Rows rounded = make_bf16_rows(rows, in_features, /*row_pairs=*/true);
    Tensor dh = Tensor::empty(x_shape, DType::f32);
    detail::input_product_then(pass.dy, scaled() ? scaled_weight(ws, ss) : ws,
                               map.grads_by_rows(xs, dh, rounded));
    weight_grads(pass, rounded);
    pass.grads[0] = dh;
  }

  // The map's values (and state) made again for dW, freed before da is made; then the map's
  // gradient, its values made there if dW did not need them.
  void values_made_again(Pass& pass) const {
    MapState state;
    state.for_backward = true;
    bool made = false;
    if (need_weight() && has_map && map.rounded_values && detail::keeps_bf16_input(xs)) {
      Bf16Rows rounded;
      map.rounded_values(xs, state, rounded);
      made = true;
      weight_grads(pass, rounded);
    } else if (need_weight()) {
      const Tensor a = has_map ? map.values(xs, state) : xs;
      made = has_map;
      weight_grads(pass, a);
    }
    if (!need_input()) return;
    const Tensor da = input_grad(pass);
    if (!has_map) {
      pass.grads[0] = da;
      return;
    }
    if (!made) map.values(xs, state);
    set_map_grads(pass, map.grads(xs, state, da, need_map()));
  }
};

// y = residual + out_scale * (map(x) W^T + b); map, bias, out_scale and residual optional.
// The recorded inputs are x, the map's params, weight, bias, out_scale, residual (undefined
// ones included, for a fixed layout).
Tensor fused_linear(const char* op, const char* input, const Tensor& x, const InputMap* map,
                    const Tensor& weight, const Tensor& bias, const Tensor& out_scale,
                    const Tensor& residual = Tensor()) {
  const detail::LinearPlan p = detail::plan_linear(op, input, x, weight, bias);
  check_out_scale(op, out_scale, p, weight);
  check_residual(op, residual, p, weight);
  const std::vector<Tensor> params = map ? map->params : std::vector<Tensor>{};
  std::vector<Tensor> inputs{x};
  inputs.insert(inputs.end(), params.begin(), params.end());
  inputs.insert(inputs.end(), {weight, bias, out_scale, residual});
  const bool any_grad = any_requires_grad(inputs);
  // No map, or a map whose gradient needs only its state: dW's operand is all that backward
  // would read of the map's values, and in bf16 mode it is kept as the product rounds it.
  std::shared_ptr<KeptForward> kept;
  if (any_grad && (!map || map->grads_from_forward_state) && detail::keeps_bf16_input(x) &&
      (needs_grad(weight) || needs_grad(out_scale)))
    kept = std::make_shared<KeptForward>();
  // LayerScale's and the residual add's own forward values (channel_affine's, add's), so the
  // output has their bits.
  const detail::AfterProduct after{out_scale, residual.defined() ? residual.detach() : Tensor()};
  Tensor out = forward_values(x, map, weight, bias, after, p, kept.get());
  if (!any_grad) return record(op, out, inputs, nullptr);

  FusedLinearBackward backward;
  for (const Tensor& t : inputs) backward.need.push_back(needs_grad(t));
  backward.n_map = 1 + params.size();
  // Without a map, a kept input is all backward reads of x: the float x is not held.
  backward.xs = kept && !map ? Tensor() : x.detach();
  backward.ws = weight.detach();
  backward.bs = bias.defined() ? bias.detach() : Tensor();
  backward.ss = out_scale.defined() ? out_scale.detach() : Tensor();
  backward.x_shape = x.shape();
  backward.map = map ? *map : InputMap{};
  backward.has_map = map != nullptr;
  backward.rows = p.rows;
  backward.in_features = p.in_features;
  backward.out_features = p.out_features;
  backward.kept = std::move(kept);
  return record(op, out, inputs, std::move(backward));
}

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
  m.grads_by_rows = [approx](const Tensor& h, Tensor& dh, Bf16Rows& rounded) {
    const int64_t cols = h.size(-1), rows = h.numel() / std::max<int64_t>(cols, 1);
    const bool tanh_form = approx != GeluApprox::none;
    const float* x = h.data<float>();
    float* d = dh.data<float>();
    uint32_t* words = rounded.words();
    add_gelu_flops(h, approx);
    return RowsDone([=](int64_t r0, int64_t r1, const float* da_rows) {
      kernels::gelu_with_grad_bf16_rows(x, da_rows, d, words, r0, r1, rows, cols, tanh_form);
    });
  };
  m.made_values = [approx](const Tensor& h) {  // h outlives the rows: the forward holds it
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
