#include "layers/attention.h"

#include <cmath>

#include "engine/ops/ops.h"
#include "layers/channel_check.h"

namespace vg::nn {

Attention::Attention(int64_t dim, int64_t num_heads, bool qkv_bias, Rng& rng, double dropout,
                     std::shared_ptr<Rng> drop_rng)
    : Module("Attention"), dim_(dim), num_heads_(num_heads) {
  check(dim > 0 && num_heads > 0 && dim % num_heads == 0, describe(),
        ": dim must be a positive multiple of num_heads");
  qkv_ = register_module("qkv", std::make_shared<Linear>(dim, 3 * dim, qkv_bias, rng));
  proj_ = register_module("proj", std::make_shared<Linear>(dim, dim, true, rng));
  proj_drop_ = register_module("proj_drop", std::make_shared<Dropout>(dropout, drop_rng));
}

std::string Attention::describe() const {
  return cat_str("Attention(dim=", dim_, ", num_heads=", num_heads_, ")");
}

void Attention::check_input(const Shape& s) const {
  const auto name = [this] { return describe(); };
  check(s.size() == 3, name, ": input must be (B, T, C), got ", s);
  check_channels(name, s, -1, dim_);
}

Tensor Attention::forward(const Tensor& x) {
  return forward(x, nullptr);
}

Tensor Attention::forward(const Tensor& x, Tensor* probs) {
  check_input(x.shape());
  return (*proj_drop_)((*proj_)(attend((*qkv_)(x), probs)));
}

Tensor Attention::attend(const Tensor& qkv, Tensor* probs) const {
  if (!probs) {
    // (B, T, 3C) in timm's q|k|v, head-major layout -> (B, T, C), the heads side by side:
    // the fused op reads the heads in place, so no permute, select or reshape copies are made.
    return qkv_attention(qkv, num_heads_);
  }
  // Step by step, keeping the probabilities: (B, T, 3C) -> (B, T, 3, H, hd) ->
  // (3, B, H, T, hd), timm's q|k|v layout.
  const int64_t B = qkv.size(0), T = qkv.size(1), hd = dim_ / num_heads_;
  Tensor parts = permute(qkv.reshape({B, T, 3, num_heads_, hd}), {2, 0, 3, 1, 4});
  Tensor q = select(parts, 0, 0), k = select(parts, 0, 1), v = select(parts, 0, 2);
  *probs = softmax(matmul(q, k, false, true) * (1.0 / std::sqrt(double(hd))));
  return permute(matmul(*probs, v), {0, 2, 1, 3}).reshape({B, T, dim_});
}

}  // namespace vg::nn
