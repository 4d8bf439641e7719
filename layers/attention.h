// Multi-head self-attention as in timm: one fused qkv projection whose output columns are
// [q (all heads) | k | v] with the heads contiguous inside each, scale head_dim^-0.5, then
// an output projection. Weights load one-to-one from timm's `attn.qkv` / `attn.proj`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/core/rng.h"
#include "layers/dropout.h"
#include "layers/linear.h"
#include "layers/module.h"

namespace vg::nn {

class Attention : public Module {
 public:
  // dim must be divisible by num_heads. `dropout` (with drop_rng) acts on the projection's
  // output, timm's proj_drop.
  Attention(int64_t dim, int64_t num_heads, bool qkv_bias, Rng& rng, double dropout = 0.0,
            std::shared_ptr<Rng> drop_rng = nullptr);

  // x (B, T, dim) -> (B, T, dim): proj_drop(proj(attend(qkv(x)))).
  Tensor forward(const Tensor& x) override;
  // The same, keeping the attention probabilities (B, H, T, T) in *probs when not null.
  Tensor forward(const Tensor& x, Tensor* probs);
  // The heads' step: qkv (B, T, 3*dim) -> (B, T, dim), the heads side by side. Through the
  // fused attention op, or, when probs is not null, step by step keeping the probabilities
  // for a loss on them (the fused op never builds them).
  Tensor attend(const Tensor& qkv, Tensor* probs = nullptr) const;
  // The check forward runs first: x must be (B, T, dim).
  void check_input(const Shape& input_shape) const;

  int64_t dim() const { return dim_; }
  int64_t num_heads() const { return num_heads_; }
  Linear& qkv() { return *qkv_; }
  Linear& proj() { return *proj_; }
  Dropout& proj_drop() { return *proj_drop_; }

 private:
  std::string describe() const;  // "Attention(dim=64, num_heads=4)"

  int64_t dim_, num_heads_;
  std::shared_ptr<Linear> qkv_, proj_;
  std::shared_ptr<Dropout> proj_drop_;
};

}  // namespace vg::nn
