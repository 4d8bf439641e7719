// The pieces of `linear` that its fused forms (ops/fused_linear.cpp) share with it: the
// operand checks, the forward product and the weight gradient's. Internal to engine/ops.
#pragma once

#include <vector>

#include "engine/core/tensor.h"
#include "engine/kernels/blas.h"
#include "engine/kernels/made_rows.h"

namespace vg::detail {

// The sizes of linear(x, weight, bias) once its operands are checked.
struct LinearPlan {
  int64_t rows = 0, in_features = 0, out_features = 0;
  Shape out_shape;
};

// Checks x (..., in), weight (out, in) and the optional bias (out); messages name the op and
// its input as the caller does ("gelu_linear", "h").
LinearPlan plan_linear(const char* op, const char* input, const Tensor& x, const Tensor& weight,
                       const Tensor& bias);

// What a fused linear does to its product y = x W^T + b before it returns it, each optional:
// y times a scale per column (LayerScale), with channel_affine's bits and FLOPs, then a residual
// (of y's shape) plus that, with add's. Where x is kept in bf16 (and in the two forms below, in
// bf16 mode), the product does it to each block of rows as it stores them (kernels/made_rows.h
// RowsDone), so y itself is never stored; otherwise passes after the product.
struct AfterProduct {
  Tensor scale, residual;
  bool any() const { return scale.defined() || residual.defined(); }
};

// y = x W^T + b as planned (the bias written first, the product added to it), with its FLOPs,
// and `after` done to it. With `kept_input`, in bf16 mode on float tensors (keeps_bf16_input()),
// also x rounded to bf16 as the product packs it, for weight_product below.
Tensor linear_values(const Tensor& x, const Tensor& weight, const Tensor& bias, const LinearPlan& p,
                     Bf16Rows* kept_input = nullptr, const AfterProduct& after = {});

// Whether a linear on x can keep its input in bf16 for dW: bf16 mode and float x.
bool keeps_bf16_input(const Tensor& x);

// The same for float rows made on demand (kernels/made_rows.h), never stored where the
// products make them a block at a time: a convolution's columns.
Tensor linear_values_made(const MadeRows& x, const Tensor& weight, const Tensor& bias,
                          const LinearPlan& p, const AfterProduct& after = {});

// The same for float rows already rounded to bf16 by rows (Bf16Rows), in bf16 mode: the bits
// of linear_values on the floats they round.
Tensor linear_values_rounded(const Bf16Rows& x, const Tensor& weight, const Tensor& bias,
                             const LinearPlan& p, const AfterProduct& after = {});

// dy^T a for dy (rows, out) and a (rows, in), a linear's dW before any scale, with its FLOPs;
// with `col`, also sum(dy, {0}) into it with the `sum` op's bits, taken in the same pass over dy
// where the products pack it (kernels/blas.h gemm_tn_sums).
Tensor weight_product(const Tensor& dy, const Tensor& a, Tensor* col);
// The same with a kept in bf16 (linear_values' kept_input), with the bits of the product on
// the float a it was rounded from.
Tensor weight_product(const Tensor& dy, const Bf16Rows& a, Tensor* col);

// da = dy w for dy (rows, out) and w (out, in), with its FLOPs, each block of da's rows handed
// to done (kernels/made_rows.h RowsDone) as the product finishes it, in cache, and da never
// stored: a linear's input gradient passed through its map's gradient on the way. Needs
// products_by_row_blocks(rows, in, out) (kernels/blas.h).
void input_product_then(const Tensor& dy, const Tensor& w, const RowsDone& done);

// {x, weight, bias}, or {x, weight} without a bias: the inputs `linear` records.
std::vector<Tensor> linear_inputs(const Tensor& x, const Tensor& weight, const Tensor& bias);

}  // namespace vg::detail
