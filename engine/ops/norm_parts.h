// The two halves (values, then gradients) of the per-channel maps that a fused linear
// (ops/fused_linear_maps.cpp) applies to its input and recomputes in backward: layer_norm,
// channel_affine and global_response_norm. Their ops are built from the same halves, so a
// fused op has the bits of the op-by-op graph. Internal to engine/ops.
//
// The gradient functions take the output gradient g and return {dx, then one per parameter},
// each undefined where its `need` flag is false.
#pragma once

#include <vector>

#include "engine/core/tensor.h"
#include "engine/kernels/bf16_gemm.h"
#include "engine/kernels/made_rows.h"

namespace vg::detail {

// layer_norm over the last axis; `stats` receives (mean, rstd) per row. The same values again
// from those stats, with their bits, in one pass over x instead of three. The gradients {dx, dw,
// db}; with `received` (x's gradient so far, autograd.h take_received_grad), dx is added into
// it in the same pass and returned in its memory.
Tensor layer_norm_values(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                         std::vector<double>& stats);
Tensor layer_norm_values_again(const Tensor& x, const Tensor& weight, const Tensor& bias,
                               const std::vector<double>& stats);
// layer_norm_values' values as rows made on demand (kernels/made_rows.h) for a float x, with
// their bits: each block's rows' stats are written as their values are made, so `stats` is
// whole once every row has been made. x, weight, bias and stats outlive the rows.
MadeRows layer_norm_made(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                         std::vector<double>& stats);
std::vector<Tensor> layer_norm_grads(const Tensor& x, const Tensor& weight,
                                     const std::vector<double>& stats, const Tensor& g,
                                     bool need_x, bool need_weight, bool need_bias,
                                     const Tensor& received = Tensor());

// channel_affine: y = x * scale + shift (shift optional). Its gradients add dx into
// `received` as layer_norm_grads does.
Tensor channel_affine_values(const Tensor& x, const Tensor& scale, const Tensor& shift);
std::vector<Tensor> channel_affine_grads(const Tensor& x, const Tensor& scale, const Tensor& g,
                                         bool need_x, bool need_scale, bool need_shift,
                                         const Tensor& received = Tensor());

// global_response_norm; `stats` receives per (sample, channel) the norm and n, then per
// sample the divisor mu + eps: B * (2C + 1) values.
Tensor grn_values(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                  std::vector<double>& stats);
// global_response_norm(gelu(h)) with the bits of the two ops, one sample at a time, so that
// GELU's values are read back from cache; GELU's values into *act and its slope into *slope
// where they are given (for backward). With `rounded` (float h), the output goes into it
// rounded to bf16, as a weight gradient's product reads it, and no tensor is returned.
Tensor gelu_grn_values(const Tensor& h, bool tanh_form, const Tensor& gamma, const Tensor& beta,
                       double eps, std::vector<double>& stats, Tensor* act, Tensor* slope,
                       Bf16Rows* rounded = nullptr);
// gelu_grn_values and grn_grads (with GELU's slope) in one pass, one sample at a time, from h
// and GRN's output gradient g: GRN's output into `a` or, with `rounded` (float h), rounded to
// bf16 into it (by pairs of rows where a sample has an even number of rows); g becomes dh in
// its own memory. Returns {dh, dgamma, dbeta}, each undefined where `need` (those three) is
// false. The bits of the two halves; what it saves is the memory traffic of GELU's values and
// slope, which never leave the cache.
std::vector<Tensor> gelu_grn_values_and_grads(const Tensor& h, bool tanh_form, const Tensor& gamma,
                                              const Tensor& beta, double eps, const Tensor& g,
                                              const std::vector<bool>& need, Tensor& a,
                                              Bf16Rows* rounded);
// dx is multiplied by dx_scale, where defined, in the same pass (GELU's slope before GRN).
std::vector<Tensor> grn_grads(const Tensor& x, const Tensor& gamma,
                              const std::vector<double>& stats, const Tensor& g, bool need_x,
                              bool need_gamma, bool need_beta, const Tensor& dx_scale = Tensor());

}  // namespace vg::detail
