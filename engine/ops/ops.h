// Every differentiable op of the engine. Each op lives in the file of its family, with its
// shape rule, forward kernel, backward and FLOP count side by side:
//   ops/elementwise.cpp  ops/reduce.cpp  ops/shape.cpp  ops/matmul.cpp  ops/softmax.cpp
//   ops/fused_linear.cpp and ops/fused_linear_maps.cpp (linear fused with its neighbours)
//   ops/layer_norm.cpp  ops/cross_entropy.cpp  ops/dropout.cpp  ops/attention.cpp
//   ops/norm.cpp (fused normalisation-layer ops)  ops/aux_loss.cpp  ops/patch.cpp  ops/conv.cpp
// Binary elementwise ops follow NumPy broadcasting. Both operands of a binary op must have
// the same dtype. Axes may be negative (counted from the end).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/tensor.h"

namespace vg {

using Axes = std::vector<int64_t>;

// --- elementwise (ops/elementwise.cpp) -------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double s);
Tensor sub(const Tensor& a, double s);
Tensor sub(double s, const Tensor& a);
Tensor mul(const Tensor& a, double s);
Tensor div(const Tensor& a, double s);
Tensor div(double s, const Tensor& a);
Tensor neg(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor pow(const Tensor& a, double exponent);
Tensor abs(const Tensor& a);  // gradient sign(x), 0 at 0
Tensor tanh(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor relu(const Tensor& a);
enum class GeluApprox { none, tanh };  // none: the exact erf form (timm's default)
Tensor gelu(const Tensor& a, GeluApprox approx = GeluApprox::none);

inline Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
inline Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
inline Tensor operator*(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
inline Tensor operator/(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
inline Tensor operator+(const Tensor& a, double s) {
  return add(a, s);
}
inline Tensor operator+(double s, const Tensor& a) {
  return add(a, s);
}
inline Tensor operator-(const Tensor& a, double s) {
  return sub(a, s);
}
inline Tensor operator-(double s, const Tensor& a) {
  return sub(s, a);
}
inline Tensor operator*(const Tensor& a, double s) {
  return mul(a, s);
}
inline Tensor operator*(double s, const Tensor& a) {
  return mul(a, s);
}
inline Tensor operator/(const Tensor& a, double s) {
  return div(a, s);
}
inline Tensor operator/(double s, const Tensor& a) {
  return div(s, a);
}
inline Tensor operator-(const Tensor& a) {
  return neg(a);
}

// --- reductions (ops/reduce.cpp) -------------------------------------------------------
// An empty `axes` reduces over every axis.
Tensor sum(const Tensor& a, const Axes& axes = {}, bool keepdim = false);
Tensor mean(const Tensor& a, const Axes& axes = {}, bool keepdim = false);
Tensor max(const Tensor& a, const Axes& axes = {}, bool keepdim = false);  // ties: first
Tensor var(const Tensor& a, const Axes& axes = {}, bool keepdim = false);  // biased (1/N)
// Sums `a` down to `shape`, the inverse of broadcasting `shape` up to a.shape().
Tensor sum_to_shape(const Tensor& a, const Shape& shape);

// --- shape (ops/shape.cpp); Tensor::reshape is the view ----------------------------------
Tensor permute(const Tensor& a, const Axes& order);
Tensor transpose(const Tensor& a, int64_t axis0, int64_t axis1);
Tensor slice(const Tensor& a, int64_t axis, int64_t start, int64_t stop);  // [start, stop)
Tensor select(const Tensor& a, int64_t axis, int64_t index);               // drops the axis
Tensor cat(const std::vector<Tensor>& parts, int64_t axis);
// Copies `a` into a tensor of `shape` that it broadcasts to.
Tensor broadcast_to(const Tensor& a, const Shape& shape);

// --- matrix products (ops/matmul.cpp), on engine/kernels/blas.h ---------------------------
// a (..., M, K) @ b (..., K, N) with the leading (batch) axes broadcast; trans_a / trans_b
// read an operand as its transpose over the last two axes without a copy. A 1-D operand
// is not promoted: both must have rank >= 2.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
// x (..., in) -> (..., out) with weight (out, in) and an optional bias (out).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
// --- linear fused with its neighbours (ops/fused_linear.cpp, its maps fused_linear_maps.cpp)
// Each equals the op-by-op graph named in its comment, but keeps for backward only the input
// of the map before the product and recomputes the map's output there: one activation less
// per linear. Where an `out_scale` s (out) is given, y = s * (...), LayerScale folded into
// the product; ds comes from the weight gradient's product, so nothing is kept for it.
// Forward values have the op-by-op bits; with out_scale, gradients differ only in rounding.
//   scaled_linear      channel_affine(linear(x, W, b), s)
//   gelu_linear        linear(gelu(h, approx), W, b), then s
//   layer_norm_linear  linear(layer_norm(x, norm_weight, norm_bias, eps), W, b)
//   affine_linear      linear(channel_affine(x, scale, shift), W, b)  (LearnableScaler)
//   gelu_grn_linear    linear(global_response_norm(gelu(h), gamma, beta, eps), W, b), then s
// With a residual (the output's shape), these three return add(residual, that), with add's
// bits and gradient: a block's residual add, made as the product stores its rows in bf16 mode.
Tensor scaled_linear(const Tensor& x, const Tensor& weight, const Tensor& bias,
                     const Tensor& out_scale, const Tensor& residual = Tensor());
Tensor gelu_linear(const Tensor& h, const Tensor& weight, const Tensor& bias = Tensor(),
                   GeluApprox approx = GeluApprox::none, const Tensor& out_scale = Tensor(),
                   const Tensor& residual = Tensor());
Tensor layer_norm_linear(const Tensor& x, const Tensor& norm_weight, const Tensor& norm_bias,
                         double eps, const Tensor& weight, const Tensor& bias = Tensor());
Tensor affine_linear(const Tensor& x, const Tensor& scale, const Tensor& shift,
                     const Tensor& weight, const Tensor& bias = Tensor());
Tensor gelu_grn_linear(const Tensor& h, const Tensor& gamma, const Tensor& beta, double eps,
                       const Tensor& weight, const Tensor& bias = Tensor(),
                       GeluApprox approx = GeluApprox::none, const Tensor& out_scale = Tensor(),
                       const Tensor& residual = Tensor());

// --- neural-network ops (softmax, layer_norm, cross_entropy, dropout), fused -------------
Tensor softmax(const Tensor& a);      // over the last axis, max-subtracted
Tensor log_softmax(const Tensor& a);  // over the last axis
// Over the last axis: biased variance, eps inside the sqrt; saves only mean and rstd.
// weight and bias (C) are optional.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-6);
// Mean over the batch of the cross-entropy of logits (B, K) with integer labels in [0, K);
// with label smoothing eps the target is (1 - eps) * onehot + eps / K.
Tensor cross_entropy(const Tensor& logits, const std::vector<int32_t>& labels,
                     double label_smoothing = 0.0);
// The same with soft targets (B, K) whose rows sum to 1 (mixup); targets get no gradient.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets);
// Zeroes each element with probability p and scales the rest by 1/(1-p); identity when
// not training or p == 0. The mask comes from `rng`.
Tensor dropout(const Tensor& x, double p, Rng& rng, bool training = true);

// --- attention (ops/attention.cpp) ------------------------------------------------------
// q, k, v (B, H, T, D) -> softmax(q k^T * D^-0.5) v, fused per (batch, head).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v);
// The same attention on timm's packed projection: qkv (B, T, 3C) laid out as (3, heads, D)
// along its last axis -> (B, T, C), the heads' outputs side by side (timm's
// transpose(1, 2).reshape(B, T, C)). Reads and writes in place: no q, k, v or output copies.
Tensor qkv_attention(const Tensor& qkv, int64_t num_heads);

// --- auxiliary losses of the LearnableScaler recipe (ops/aux_loss.cpp) ------------------
// The feature-decay hinge on a residual stream x (any shape): with danger = |x| - threshold
// over the elements above the threshold, mean(danger) + max(danger); 0 when none is.
Tensor feature_decay_loss(const Tensor& x, double threshold);
// Attention peakedness on probabilities (..., T): over the rows whose maximum is below
// min_peak, 1 - mean(row maximum); 0 when every row is peaked enough.
Tensor attention_peak_loss(const Tensor& probs, double min_peak = 0.5);

// --- normalisation layers' fused ops (ops/norm.cpp) -------------------------------------
// y = x * scale + shift over the last (channel) axis; scale (C), shift (C) optional
// (undefined). One pass per row block in backward; the sums over the leading axes are
// deterministic. LayerScale uses it without shift, LearnableScaler with it.
Tensor channel_affine(const Tensor& x, const Tensor& scale, const Tensor& shift = Tensor());
// Global Response Norm (ConvNeXt V2) on x (B, spatial..., C) with >= 1 spatial axis:
// g = L2 norm over the spatial axes per (sample, channel), n = g / (mean_C g + eps),
// y = gamma * (x * n) + beta + x; gamma, beta (C). Where a channel's norm is 0 its
// x / g is taken as 0 in backward (as PyTorch does), so the gradient stays finite.
Tensor global_response_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                            double eps = 1e-6);

// --- patches (ops/patch.cpp) -----------------------------------------------------------
// Images (B, H, W, C) -> (B, (H/p)(W/p), C*p*p): non-overlapping p x p patches in row-major
// (h, w) order, each flattened in (c, i, j) order, so that a conv weight [E, C, p, p] viewed
// as [E, C*p*p] applied with `linear` equals a stride-p convolution (timm's PatchEmbed).
Tensor patchify(const Tensor& images, int64_t patch_size);

// --- convolution (ops/conv.cpp) ---------------------------------------------------------
// x (N, H, W, C_in) channels-last, weight (C_out, C_in, k, k) (PyTorch's Conv2d layout, read
// as the matrix (C_out, C_in*k*k)), bias (C_out) optional; stride s, zero padding p on every
// side -> (N, Ho, Wo, C_out), Ho = (H + 2p - k) / s + 1 (likewise Wo). PyTorch's
// conv2d(x.permute(0, 3, 1, 2), weight, bias, s, p).permute(0, 2, 3, 1).
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride = 1,
              int64_t padding = 0);

}  // namespace vg
