// The map a fused linear applies to its input, and the fused linear itself, shared by
// ops/fused_linear.cpp (the forward and backward around the product) and
// ops/fused_linear_maps.cpp (the maps: LayerNorm, an affine, GELU, GELU + GRN, and the ops
// made of them). Internal to engine/ops.
#pragma once

#include <functional>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/kernels/bf16_gemm.h"
#include "engine/kernels/made_rows.h"

namespace vg::detail {

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
  // Optional, for a map of one element at a time without params (GELU): values_and_grads as a
  // pass that da's product hands each block of da's rows as it finishes them
  // (kernels/made_rows.h RowsDone), writing dx, and the values into `a` or, with `rounded`
  // (bf16 mode; by pairs of rows), rounded into it; dx, a and rounded are made by the caller.
  // The bits of values_and_grads; da is never stored: at dim 192 its 19.7 MB of floats a block
  // are not written out and read back.
  std::function<RowsDone(const Tensor& x, Tensor& dx, Tensor& a, Bf16Rows* rounded)> grads_by_rows;
  // Whether `grads` needs only what `values` left in the forward (statistics), not the values
  // themselves: LayerNorm's and an affine's. In bf16 mode such a map's linear keeps its input
  // rounded to bf16 for dW, and backward makes nothing again.
  bool grads_from_forward_state = false;
  // Optional, for such a map whose statistics cost passes of their own (LayerNorm's mean and
  // rstd): its values again from the state `values` left, with their bits. In fp32 the
  // forward then holds that state (two doubles a row) for backward, which makes the values for
  // dW in one pass over x instead of three.
  std::function<Tensor(const Tensor& x, const MapState& state)> values_again;
  // Optional: `values` with the values rounded to bf16 by rows into `rounded` instead of a
  // tensor, as the products read them, for the forward and backward in bf16 mode (GRN: half
  // the bytes written and read back, and no packing of them; the same bits).
  std::function<void(const Tensor& x, MapState& state, Bf16Rows& rounded)> rounded_values;
  // Optional: its values as rows made on demand (kernels/made_rows.h), with the bits of
  // `values`, and the state `values` leaves, whole once every row has been made. The forward's
  // float product makes a block of them as it reads it (the float tiles, as a convolution's
  // columns) or packs it (bf16 mode), so the map's output (GELU's, fc2's input of 4 x dim floats
  // a token; LayerNorm's, qkv's and fc1's) is never written to memory and read back.
  std::function<MadeRows(const Tensor& x, MapState& state)> made_values;
};

// y = residual + out_scale * (map(x) W^T + b); map, bias, out_scale and residual optional
// (ops/fused_linear.cpp). The recorded inputs are x, the map's params, weight, bias,
// out_scale, residual (undefined ones included, for a fixed layout). `op` and `input` name
// the op and x in error messages ("gelu_linear", "h").
Tensor fused_linear(const char* op, const char* input, const Tensor& x, const InputMap* map,
                    const Tensor& weight, const Tensor& bias, const Tensor& out_scale,
                    const Tensor& residual = Tensor());

}  // namespace vg::detail
