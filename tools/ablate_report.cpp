// The Markdown report of `vitgrad ablate`.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "tools/ablate.h"

namespace vg::tools {
namespace {

std::string percent(double v) {
  if (!std::isfinite(v)) return "—";
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << 100 * v << "%";
  return s.str();
}

std::string minutes(double seconds) {
  std::ostringstream s;
  const int64_t t = static_cast<int64_t>(seconds + 0.5);
  s << t / 60 << "m" << std::setw(2) << std::setfill('0') << t % 60 << "s";
  return s.str();
}

// The augmentations in the order the loader applies them, as timm's flags name them.
std::string describe_augmentation(const TrainOptions& o) {
  if (!o.augment) return "none";
  std::ostringstream s;
  s << (o.crop ? "random crop and flip" : "flip");
  if (!o.rand_augment.empty()) s << ", RandAugment " << o.rand_augment;
  if (o.reprob > 0) s << ", random erasing " << o.reprob;
  if (o.mixup > 0) s << ", mixup " << o.mixup;
  if (o.cutmix > 0) s << ", cutmix " << o.cutmix;
  if ((o.mixup > 0 || o.cutmix > 0) && o.mixup_prob < 1) s << " (probability " << o.mixup_prob << ")";
  return s.str();
}

std::string describe_recipe(const TrainOptions& o, int64_t depth) {
  std::ostringstream s;
  s << o.opt << " lr " << o.lr << " wd " << o.wd << ", batch " << o.batch << " x " << o.accum
    << " accumulated, ";
  if (o.steps > 0)
    s << o.steps << " optimiser steps";
  else
    s << o.epochs << " epoch" << (o.epochs == 1 ? "" : "s");
  s << ", schedule " << o.sched;
  if (o.sched == "learnable-scaler")
    s << " (factor " << o.sched_factor << ", threshold " << o.sched_threshold << ")";
  if (o.clip > 0) s << ", clip " << o.clip;
  if (o.opt == "lamb") s << " (then LAMB's own global clip at 1.0)";
  if (o.label_smoothing > 0) s << ", label smoothing " << o.label_smoothing;
  if (o.aux.feature_decay > 0)
    s << ", feature-decay hinge " << o.aux.feature_decay << " above |x| "
      << o.aux.feature_threshold;
  if (o.aux.attn_extra_loss > 0)
    s << ", attention-peakedness loss " << o.aux.attn_extra_loss << " on the first "
      << std::min(o.aux.attn_layers, depth) << " blocks";
  s << "; seed " << o.seed << ", data " << o.data << ", augmentation " << describe_augmentation(o);
  if (o.amp != "fp32") s << ", products in " << o.amp;
  return s.str();
}

}  // namespace

std::string ablation_report(const std::vector<AblationRow>& rows, const TrainOptions& recipe,
                            const std::string& command, const std::vector<std::string>& plots,
                            double total_seconds) {
  std::ostringstream md;
  const ViTConfig& m = rows.empty() ? recipe.model : rows.front().model;
  md << "# Depth ablation: LayerNorm, LayerScale, LearnableScaler, GRN\n\n"
     << "`" << command << "`\n\n"
     << "Model: ViT depth " << m.depth << ", dim " << m.embed_dim << ", " << m.num_heads
     << " heads, patch " << m.patch_size << ", MLP x" << m.mlp_ratio << ", " << to_string(m.global_pool)
     << " pooling" << (m.stem.empty() ? "" : ", stem " + stem_str(m.stem))
     << ". Training (the same for every variant): " << describe_recipe(recipe, m.depth)
     << ".\n\n"
     << "| variant | norm | LayerScale | GRN | parameters | final test acc | best test acc | "
        "time | diverged |\n"
     << "|---|---|---|---|---:|---:|---:|---:|---|\n";
  for (const AblationRow& r : rows) {
    const std::string ls = r.model.layerscale.mode == LayerScaleSetting::Mode::by_depth ? "auto (" +
                                                              [&] {
                                                                std::ostringstream s;
                                                                s << r.model.layerscale_init();
                                                                return s.str();
                                                              }() +
                                                              ")"
                                                        : r.model.layerscale.str();
    md << "| " << r.name << " | " << to_string(r.model.norm) << " | " << ls << " | "
       << (r.model.grn ? "yes" : "no") << " | " << r.parameters << " | "
       << percent(r.final_accuracy) << " | " << percent(r.best_accuracy) << " | "
       << minutes(r.seconds) << " | " << (r.diverged ? "yes" : "no") << " |\n";
  }
  md << "\nTotal time " << minutes(total_seconds)
     << ". Runs (config.json, metrics.jsonl, "
        "checkpoints) are in the folders named after the variants.\n";
  for (const AblationRow& r : rows)
    if (r.diverged) md << "\n" << r.name << " diverged: " << r.why << "\n";
  const char* captions[][2] = {
      {"loss", "Training loss per step and test loss per epoch"},
      {"accuracy", "Training accuracy per step and test accuracy per epoch"},
      {"layerscale", "Per-block mean |gamma| of LayerScale"},
      {"grn", "Per-block mean |gamma| of GRN"}};
  for (const std::string& p : plots) {
    std::string caption = p;
    for (const auto& c : captions)
      if (p == c[0]) caption = c[1];
    md << "\n## " << caption << "\n\n![" << caption << "](" << p << ".svg)\n";
  }
  return md.str();
}

}  // namespace vg::tools
