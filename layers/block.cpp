#include "layers/block.h"

#include <cmath>

#include "engine/ops/ops.h"
#include "layers/fusion.h"

namespace vg::nn {

Block::Block(int64_t dim, int64_t num_heads, double mlp_ratio, bool qkv_bias, NormKind norm,
             double layerscale_init, bool use_grn, double drop_path, double dropout, Rng& rng,
             std::shared_ptr<Rng> drop_rng)
    : Module("Block"), dim_(dim) {
  check(mlp_ratio > 0, "Block: mlp_ratio must be positive, got ", mlp_ratio);
  const int64_t hidden = static_cast<int64_t>(double(dim) * mlp_ratio);  // timm: int(dim*r)
  norm1_ = register_module("norm1", make_norm(norm, dim, rng));
  attn_ = register_module(
      "attn", std::make_shared<Attention>(dim, num_heads, qkv_bias, rng, dropout, drop_rng));
  if (layerscale_init != 0)
    ls1_ = register_module("ls1", std::make_shared<LayerScale>(dim, layerscale_init));
  drop_path1_ = register_module("drop_path1", std::make_shared<DropPath>(drop_path, drop_rng));
  norm2_ = register_module("norm2", make_norm(norm, dim, rng));
  mlp_ =
      register_module("mlp", std::make_shared<Mlp>(dim, hidden, use_grn, dropout, rng, drop_rng));
  if (layerscale_init != 0)
    ls2_ = register_module("ls2", std::make_shared<LayerScale>(dim, layerscale_init));
  drop_path2_ = register_module("drop_path2", std::make_shared<DropPath>(drop_path, drop_rng));
}

Tensor Block::forward(const Tensor& x) {
  return forward(x, BlockAuxLoss{}, nullptr);
}

namespace {

void add_term(Tensor* extra, const Tensor& term, double weight) {
  *extra = extra->defined() ? add(*extra, mul(term, weight)) : mul(term, weight);
}

}  // namespace

Tensor Block::forward(const Tensor& x, const BlockAuxLoss& aux, Tensor* extra) {
  const bool hinge = extra && aux.feature_decay > 0, peak = extra && aux.attn_peak > 0;
  Tensor probs;
  // Without a DropPath to apply, each branch adds its residual itself (layers/fusion.h).
  Tensor* keep = peak ? &probs : nullptr;
  Tensor h;
  if (drop_path1_->active())
    h = add(x, (*drop_path1_)(attention_branch(x, *norm1_, *attn_, ls1_.get(), keep, fused_)));
  else
    h = attention_branch(x, *norm1_, *attn_, ls1_.get(), keep, fused_, x);
  if (peak) add_term(extra, attention_peak_loss(probs), aux.attn_peak);
  if (hinge) add_term(extra, feature_decay_loss(h, aux.feature_threshold), aux.feature_decay);
  Tensor y;
  if (drop_path2_->active())
    y = add(h, (*drop_path2_)(mlp_branch(h, *norm2_, *mlp_, ls2_.get(), fused_)));
  else
    y = mlp_branch(h, *norm2_, *mlp_, ls2_.get(), fused_, h);
  if (hinge) add_term(extra, feature_decay_loss(y, aux.feature_threshold), aux.feature_decay);
  return y;
}

void Block::add_layerscale(double init_value) {
  check(!ls1_, "Block.add_layerscale: the block already has LayerScale");
  check(init_value != 0, "Block.add_layerscale: init_value must not be 0");
  ls1_ = std::make_shared<LayerScale>(dim_, init_value);
  ls2_ = std::make_shared<LayerScale>(dim_, init_value);
  // Keep timm's order of children: ... attn, ls1, drop_path1, norm2, mlp, ls2, drop_path2.
  insert_module_after("attn", "ls1", ls1_);
  insert_module_after("mlp", "ls2", ls2_);
  ls1_->train(is_training());
  ls2_->train(is_training());
}

void apply_layerscale_to_blocks(Module& model, double init_value) {
  for (auto& [path, module] : model.named_modules())
    if (auto* block = dynamic_cast<Block*>(module); block && !block->has_layerscale())
      block->add_layerscale(init_value);
}

}  // namespace vg::nn
