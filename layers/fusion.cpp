#include "layers/fusion.h"

#include "engine/ops/ops.h"
#include "layers/channel_check.h"

namespace vg::nn {
namespace {

// residual + branch, or the branch alone without a residual.
Tensor plus(const Tensor& residual, const Tensor& branch) {
  return residual.defined() ? add(residual, branch) : branch;
}

// linear(norm(x)) as one op, in the linear's scope.
Tensor norm_linear(const Tensor& x, const TokenNorm& norm, Linear& linear) {
  return linear.run([&] {
    linear.check_input(x.shape());
    check_channels([&norm] { return norm.describe(); }, x.shape(), -1, norm.dim());
    const ChannelMap map = norm.channel_map();
    if (map.kind == ChannelMap::Kind::layer_norm)
      return layer_norm_linear(x, map.scale, map.shift, map.eps, linear.weight(), linear.bias());
    return affine_linear(x, map.scale, map.shift, linear.weight(), linear.bias());
  });
}

// residual + ls(linear(x)) as one op, in the linear's scope, residual and ls optional; without
// ls the residual is added after linear(x).
Tensor linear_scale(const Tensor& x, Linear& linear, const LayerScale* ls,
                    const Tensor& residual = Tensor()) {
  if (!ls) return plus(residual, linear(x));
  return linear.run([&] {
    linear.check_input(x.shape());
    return scaled_linear(x, linear.weight(), linear.bias(), ls->gamma(), residual);
  });
}

Tensor scale(const Tensor& x, LayerScale* ls) {
  return ls ? (*ls)(x) : x;
}

// The residual of the branches below, where one is folded into their last op, or nothing.
Tensor folded(const Tensor& residual, const Dropout& after) {
  return after.active() ? Tensor() : residual;
}

}  // namespace

Tensor attention_branch(const Tensor& x, TokenNorm& norm, Attention& attn, LayerScale* ls,
                        Tensor* probs, bool fuse, const Tensor& residual) {
  if (!fuse) {
    const Tensor normed = norm(x);
    return plus(residual, scale(attn.run([&] { return attn.forward(normed, probs); }), ls));
  }
  // Dropout zeroes and rescales elements, so it commutes with LayerScale's per-channel scale.
  const Tensor inner = folded(residual, attn.proj_drop());
  const Tensor out = attn.run([&] {
    attn.check_input(x.shape());
    const Tensor heads = attn.attend(norm_linear(x, norm, attn.qkv()), probs);
    return attn.proj_drop()(linear_scale(heads, attn.proj(), ls, inner));
  });
  return inner.defined() ? out : plus(residual, out);
}

Tensor mlp_branch(const Tensor& x, TokenNorm& norm, Mlp& mlp, LayerScale* ls, bool fuse,
                  const Tensor& residual) {
  if (!fuse) return plus(residual, scale(mlp(norm(x)), ls));
  const Tensor inner = folded(residual, mlp.drop2());
  const Tensor out = mlp.run([&] {
    Tensor h = norm_linear(x, norm, mlp.fc1());
    if (mlp.drop1().active()) {
      h = mlp.drop1()(mlp.act()(h));
      if (mlp.grn()) h = (*mlp.grn())(h);
      return mlp.drop2()(linear_scale(h, mlp.fc2(), ls, inner));
    }
    // With nothing random between act and fc2, one op runs act, GRN and fc2: it keeps fc1's
    // output for backward and recomputes the rest there, instead of keeping one or two more
    // tensors of the hidden size (the largest activations of a block).
    const Linear& fc2 = mlp.fc2();
    const Tensor gamma = ls ? ls->gamma() : Tensor();
    const GlobalResponseNorm* grn = mlp.grn();
    return mlp.drop2()(grn ? gelu_grn_linear(h, grn->gamma(), grn->beta(), grn->eps(), fc2.weight(),
                                             fc2.bias(), mlp.act().approx(), gamma, inner)
                           : gelu_linear(h, fc2.weight(), fc2.bias(), mlp.act().approx(), gamma,
                                         inner));
  });
  return inner.defined() ? out : plus(residual, out);
}

}  // namespace vg::nn
