// `vitgrad ablate`: the same deep ViT trained with LayerNorm, LayerNorm + LayerScale,
// LearnableScaler and LearnableScaler + GRN, with one seed, data set and budget, and a
// Markdown report with SVG plots comparing them.
#pragma once

#include <string>
#include <vector>

#include "models/training.h"

namespace vg::tools {

// One trained variant of the ablation, as the report shows it.
struct AblationRow {
  std::string name, description;
  ViTConfig model;
  int64_t parameters = 0;
  double final_accuracy = NAN, best_accuracy = NAN, seconds = 0;
  bool diverged = false;
  std::string why;  // what stopped a diverged run
  std::string dir;  // its run folder, relative to the report
};

// The four variants of `base` (its norm, LayerScale and GRN replaced).
std::vector<std::pair<std::string, ViTConfig>> ablation_variants(const ViTConfig& base);

// DIR/report.md's text: the setup, the table and the plots that exist in `plots`.
std::string ablation_report(const std::vector<AblationRow>& rows, const TrainOptions& recipe,
                            const std::string& command, const std::vector<std::string>& plots,
                            double total_seconds);

}  // namespace vg::tools
