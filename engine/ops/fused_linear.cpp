// linear fused with its neighbours in a ViT block, to keep fewer activations for backward.
//
// Op by op, a linear keeps its input for dW, and the per-channel map that made that input
// (LayerNorm, LearnableScaler's affine, GELU, GRN) keeps its own input too: two tensors where one
// would do, since the map is cheap to run again. Each op here keeps only the map's input and
// recomputes the map's output in backward, with the map's own value and gradient code
// (ops/norm_parts.h, gelu_math.h), so its results have the bits of the op-by-op graph; LayerNorm's
// statistics (two doubles a row) are held from the forward, so that backward makes its values in
// one pass instead of three. In bf16 mode, a map whose gradient needs only its statistics
// (LayerNorm, an affine) has its values kept instead, as dW's product reads them: rounded to bf16,
// half a float input's bytes, and backward makes nothing again (the same bits: they are the values
// backward would make); so has a linear without a map (scaled_linear), whose float input is then
// not held. GELU's values, which backward makes again, and in fp32 LayerNorm's (each row's
// statistics written as its values are made), the forward's product makes a block of rows at a
// time as it reads or packs them (kernels/made_rows.h): never stored, with the same bits.
// Backward's pass writes them (in bf16 mode rounded to bf16, as dW's product reads them) and takes
// da = dy W a block of rows at a time from the product that makes it (kernels/made_rows.h
// RowsDone): da is never stored either. Both routes run where the float tiles run and in bf16 mode.
// GRN's output, which needs a whole sample's statistics before its first value, the bf16 forward
// writes rounded to bf16 as the product would pack it, half the floats' bytes, and the product
// takes those words as A.
//
// Optionally a per-channel scale s (LayerScale) follows the product: y = s * (a W^T + b).
// Op by op, LayerScale would keep the product for ds = sum_rows dy * (a W^T + b); here ds
// comes from G = dy^T a, which dW needs anyway:
//   ds_o = sum_i W_oi G_oi + b_o sum_rows dy_o,   dW = s * G,   db = s * sum_rows dy,
//   da = dy (s * W).
// The forward has the op-by-op bits; these gradients equal op-by-op ones up to rounding.
// The maps themselves, and the ops made of them, are in ops/fused_linear_maps.cpp.

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/kernels/bf16_gemm.h"
#include "engine/kernels/blas.h"
#include "engine/kernels/row_scale.h"
#include "engine/ops/fused_linear_map.h"
#include "engine/ops/linear_parts.h"
#include "engine/ops/ops.h"

namespace vg {
namespace {

using detail::InputMap;
using detail::MapState;

bool needs_grad(const Tensor& t) {
  return t.defined() && (t.requires_grad() || t.grad_fn());
}

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

void check_residual(const char* op, const Tensor& r, const detail::LinearPlan& p, const Tensor& w) {
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
// as the product reads or packs it, or rounded to bf16 first, or stored; with `kept`, also a
// rounded to bf16 for dW, and the map's statistics; with `stats` (and no `kept`), the map's
// statistics alone. Every a made here is freed on return: the caller keeps only x (and, in
// bf16 mode, perhaps a as bf16). `after` (a scale, a residual) is done to the output, in bf16
// mode as the product stores it (linear_parts.h).
Tensor forward_values(const Tensor& x, const InputMap* map, const Tensor& weight,
                      const Tensor& bias, const detail::AfterProduct& after,
                      const detail::LinearPlan& p, KeptForward* kept, MapState* stats) {
  MapState state;
  const bool float_rows = !kept && x.dtype() == DType::f32 && x.numel() > 0;
  const bool bf16_rows = float_rows && products_make_rows();
  Tensor out;
  if (map && map->made_values && float_rows &&
      products_by_row_blocks(p.rows, p.out_features, p.in_features)) {
    out = detail::linear_values_made(map->made_values(x.detach(), state), weight, bias, p, after);
  } else if (map && map->rounded_values && bf16_rows) {
    Bf16Rows rounded;  // the map's values as the product reads them: half the bytes
    map->rounded_values(x.detach(), state, rounded);
    out = detail::linear_values_rounded(rounded, weight, bias, p, after);
  } else {
    const Tensor a = map ? map->values(x.detach(), state) : x.detach();
    out = detail::linear_values(a, weight, bias, p, kept ? &kept->input : nullptr, after);
  }
  if (kept)
    kept->state = std::move(state);
  else if (stats)
    *stats = std::move(state);
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
  std::shared_ptr<MapState> forward_stats;  // the map's statistics, where it has values_again

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
  // mode as dW's product reads them; where the map offers it and the products hand da's rows
  // over (bf16 mode, and fp32 on the float tiles), on each block of them as the product
  // finishes it.
  void values_with_grads(Pass& pass) const {
    Tensor a;
    Bf16Rows rounded;
    const bool round = detail::keeps_bf16_input(xs);
    if (map.grads_by_rows && xs.dtype() == DType::f32 &&
        products_by_row_blocks(rows, in_features, out_features))
      return grads_in_product(pass, round);
    const std::vector<Tensor> dmap =
        map.values_and_grads(xs, input_grad(pass), need_map(), a, round ? &rounded : nullptr);
    if (round)
      weight_grads(pass, rounded);
    else
      weight_grads(pass, a);
    set_map_grads(pass, dmap);
  }

  // The same with the map's pass run on each block of da's rows as its product finishes them.
  void grads_in_product(Pass& pass, bool round) const {
    Bf16Rows rounded = round ? make_bf16_rows(rows, in_features, /*row_pairs=*/true) : Bf16Rows();
    Tensor a = round ? Tensor() : Tensor::empty(x_shape, DType::f32);
    Tensor dh = Tensor::empty(x_shape, DType::f32);
    detail::input_product_then(pass.dy, scaled() ? scaled_weight(ws, ss) : ws,
                               map.grads_by_rows(xs, dh, a, round ? &rounded : nullptr));
    if (round)
      weight_grads(pass, rounded);
    else
      weight_grads(pass, a);
    pass.grads[0] = dh;
  }

  // The map's values (and state) made again for dW, freed before da is made, from the forward's
  // statistics where it held them; then the map's gradient, its values made there if dW did not
  // need them and the forward held no statistics.
  void values_made_again(Pass& pass) const {
    MapState state;
    state.for_backward = true;
    const MapState* stats = forward_stats.get();
    bool made = false;
    if (need_weight() && has_map && map.rounded_values && detail::keeps_bf16_input(xs)) {
      Bf16Rows rounded;
      map.rounded_values(xs, state, rounded);
      made = true;
      weight_grads(pass, rounded);
    } else if (need_weight()) {
      const Tensor a = !has_map ? xs : stats ? map.values_again(xs, *stats) : map.values(xs, state);
      made = has_map;
      weight_grads(pass, a);
    }
    if (!need_input()) return;
    const Tensor da = input_grad(pass);
    if (!has_map) {
      pass.grads[0] = da;
      return;
    }
    if (!made && !stats) map.values(xs, state);
    set_map_grads(pass, map.grads(xs, stats ? *stats : state, da, need_map()));
  }
};

}  // namespace

Tensor detail::fused_linear(const char* op, const char* input, const Tensor& x, const InputMap* map,
                            const Tensor& weight, const Tensor& bias, const Tensor& out_scale,
                            const Tensor& residual) {
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
  // Otherwise, a map whose values come again from its statistics (LayerNorm): those, for
  // backward.
  std::shared_ptr<MapState> stats;
  if (any_grad && !kept && map && map->values_again) stats = std::make_shared<MapState>();
  Tensor out = forward_values(x, map, weight, bias, after, p, kept.get(), stats.get());
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
  backward.forward_stats = std::move(stats);
  return record(op, out, inputs, std::move(backward));
}

}  // namespace vg
