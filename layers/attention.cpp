#include "layers/attention.h"

#include "engine/ops.h"
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
  check(s.size() == 3, describe(), ": input must be (B, T, C), got ", shape_str(s));
  check_channels(describe(), s, -1, dim_);
}

Tensor Attention::forward(const Tensor& x) {
  auto scope = enter();
  check_input(x.shape());
  // (B, T, 3C) in timm's q|k|v, head-major layout -> (B, T, C), the heads side by side: the
  // fused op reads the heads in place, so no permute, select or reshape copies are made.
  Tensor out = qkv_attention(qkv_->forward(x), num_heads_);
  return proj_drop_->forward(proj_->forward(out));
}

double Attention::flop_count(const Shape& s) const {
  check_input(s);
  const double B = double(s[0]), T = double(s[1]);
  return qkv_->flop_count(s) + proj_->flop_count(s) + 4.0 * B * T * T * double(dim_) +
         5.0 * B * double(num_heads_) * T * T;
}

Shape Attention::output_shape(const Shape& s) const {
  check_input(s);
  return s;
}

}  // namespace vg::nn
