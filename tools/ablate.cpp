#include "tools/ablate.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "engine/core/error.h"
#include "engine/core/parallel.h"
#include "engine/io/checkpoint.h"
#include "models/run_data.h"
#include "tools/args.h"
#include "tools/model_flags.h"
#include "tools/train_flags.h"

namespace vg::tools {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The default budget: 4 epochs of Fashion-MNIST per variant, about half an hour for all four
// on two quiet cores of a laptop-class CPU (the report records the real time).
constexpr int64_t kDefaultEpochs = 4;

std::vector<Flag> ablate_flags() {
  std::vector<Flag> flags;
  for (const Flag& f : model_flags())  // each variant sets the norm, LayerScale and GRN itself
    if (f.name != "--norm" && f.name != "--layerscale" && f.name != "--grn") flags.push_back(f);
  for (Flag f : recipe_flags()) {
    if (f.name == "--epochs")  // ablate's own default
      f.help = cat_str("passes over the training set per variant (default ", kDefaultEpochs, ")");
    flags.push_back(f);
  }
  flags.push_back({"--threads", "N", "threads for kernels and OpenBLAS (default: all cores)"});
  flags.push_back({"--log-every", "N", "steps between metrics records (default 25)"});
  flags.push_back({"--out", "DIR", "where the runs and report.md go (required)"});
  return flags;
}

// A run that stopped on a non-finite loss diverged; anything else is a real error.
bool is_divergence(const std::string& message) {
  for (const char* word : {"diverged", "NaN", "nan", "Inf", "inf", "non-finite"})
    if (message.find(word) != std::string::npos) return true;
  return false;
}

// Final and best test accuracy from a run's epoch records (what a stopped run left).
void read_accuracies(const fs::path& metrics, AblationRow& row) {
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    const json r = json::parse(line, nullptr, false);
    if (!r.is_object() || r.value("kind", "") != "epoch") continue;
    const auto it = r.find("test_accuracy");
    if (it == r.end() || !it->is_number()) continue;
    row.final_accuracy = it->get<double>();
    if (!(row.best_accuracy >= row.final_accuracy)) row.best_accuracy = row.final_accuracy;
  }
}

bool has_values(const fs::path& metrics, const char* key) {
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    const json r = json::parse(line, nullptr, false);
    if (r.is_object() && r.contains(key) && !r.at(key).is_null()) return true;
  }
  return false;
}

// One chart through `vitgrad plot`, over the variants that logged `key`; false if none did.
bool plot(const std::string& what, const char* key, const std::vector<AblationRow>& rows,
          const fs::path& out) {
  std::vector<std::string> args;
  std::string labels;
  for (const AblationRow& r : rows) {
    const fs::path metrics = out / r.dir / "metrics.jsonl";
    if (!has_values(metrics, key)) continue;
    args.push_back(metrics.string());
    labels += (labels.empty() ? "" : ",") + r.name;
  }
  if (args.empty()) return false;
  const std::string file = what + ".svg";
  args.insert(args.end(), {"--what", what, "--label", labels, "-o", (out / file).string()});
  try {
    run_plot(args);
  } catch (const UsageError& e) {
    std::cerr << "vitgrad ablate: no " << file << ": " << e.what() << "\n";
    return false;
  }
  return true;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void write_report(const std::vector<AblationRow>& rows, const TrainOptions& recipe,
                  const std::string& command, const fs::path& out, double seconds) {
  std::vector<std::string> plots;
  for (const char* what : {"loss", "accuracy", "layerscale", "grn"})
    if (plot(what, what, rows, out)) plots.push_back(what);
  write_file_atomically((out / "report.md").string(),
                        ablation_report(rows, recipe, command, plots, seconds));
}

// The model defaults to the recipe's (depth 24); --preset, --config or --model replaces it.
std::vector<std::string> with_default_model(const std::vector<std::string>& argv) {
  std::vector<std::string> with_model = argv;
  bool named = false;
  for (const std::string& a : argv)
    named |= a.starts_with("--preset") || a.starts_with("--config") || a.starts_with("--model");
  if (!named) with_model.insert(with_model.begin(), {"--preset", "fmnist-ls-recipe"});
  return with_model;
}

void print_help(const ArgParser& args) {
  std::cout << args.help()
            << "\nTrains the same ViT (default: fmnist-ls-recipe's, depth 24) with LayerNorm,\n"
               "LayerNorm + LayerScale (auto init), LearnableScaler and LearnableScaler + GRN\n"
               "under the LearnableScaler training recipe (default: "
            << kDefaultEpochs
            << " epochs each), and writes DIR/report.md\nwith a table and "
               "SVG plots. A variant whose loss turns non-finite is reported as diverged.\n";
}

TrainOptions variant_options(const TrainOptions& recipe, const AblationRow& row,
                             const fs::path& out) {
  TrainOptions o = recipe;
  o.model = row.model;
  o.out = (out / row.dir).string();
  return o;
}

// One row a variant, every variant's model and options checked before any of them trains.
std::vector<AblationRow> checked_rows(ArgParser& args, const ViTConfig& base,
                                      const TrainOptions& recipe, const fs::path& out) {
  std::vector<AblationRow> rows;
  for (auto& [name, config] : ablation_variants(base)) {
    AblationRow row;
    row.name = name;
    row.model = config;
    row.dir = name;
    try {
      config.validate();
      variant_options(recipe, row, out).validate();
      row.parameters = ViT(config).num_parameters();
    } catch (const Error& e) {
      args.fail(e.what());
    }
    rows.push_back(row);
  }
  return rows;
}

// Trains one variant into its folder; a divergence is a result, any other error is not.
void train_variant(AblationRow& row, const TrainOptions& recipe, const fs::path& out) {
  const TrainOptions o = variant_options(recipe, row, out);
  fs::remove(fs::path(o.out) / "metrics.jsonl");  // a rerun replaces, not appends
  std::cerr << "== " << row.name << "\n";
  const auto t0 = std::chrono::steady_clock::now();
  try {
    const TrainResult r = train(o, std::cerr);
    row.diverged = !std::isfinite(r.test_loss);
    if (row.diverged) row.why = "non-finite test loss";
  } catch (const Error& e) {
    if (!is_divergence(e.what())) throw;
    row.diverged = true;
    row.why = e.what();
    std::cerr << "vitgrad ablate: " << row.name << " diverged: " << e.what() << "\n";
  }
  row.seconds = seconds_since(t0);
  read_accuracies(fs::path(o.out) / "metrics.jsonl", row);
}

}  // namespace

std::vector<std::pair<std::string, ViTConfig>> ablation_variants(const ViTConfig& base) {
  ViTConfig ln = base, ln_ls = base, ls = base, ls_grn = base;
  ln.norm = ln_ls.norm = NormKind::layernorm;
  ls.norm = ls_grn.norm = NormKind::learnable_scaler;
  ln.layerscale = ls.layerscale = ls_grn.layerscale = LayerScaleSetting::none();
  ln_ls.layerscale = LayerScaleSetting::by_depth();
  ln.grn = ln_ls.grn = ls.grn = false;
  ls_grn.grn = true;
  return {{"layernorm", ln},
          {"layernorm+layerscale", ln_ls},
          {"learnable_scaler", ls},
          {"learnable_scaler+grn", ls_grn}};
}

int run_ablate(const std::vector<std::string>& argv) {
  ArgParser args("ablate", "vitgrad ablate [model flags] [training flags] --out DIR",
                 ablate_flags());
  recipe_aliases(args);
  model_aliases(args);
  args.parse(with_default_model(argv));
  if (args.help_requested()) {
    print_help(args);
    return 0;
  }
  if (!args.has("--out") || args.text("--out").empty())
    args.fail("no output folder (add --out DIR)");
  threads_from_flags(args);
  TrainOptions recipe = training_defaults("fmnist-ls-recipe");
  recipe.epochs = kDefaultEpochs;
  recipe_from_flags(args, recipe);
  const data::DataShape data = training_data_shape(recipe);  // the model is made for the data
  const ViTConfig base = model_from_flags(args, &data);
  recipe.log_every = args.integer("--log-every", 25, 1, INT64_MAX / 2);
  const fs::path out = args.text("--out");
  std::vector<AblationRow> rows = checked_rows(args, base, recipe, out);
  fs::create_directories(out);
  std::string command = "vitgrad ablate";
  for (const std::string& a : argv) command += " " + a;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < rows.size(); ++i) {
    train_variant(rows[i], recipe, out);
    // The report so far, rewritten after each variant: a long run stopped early keeps it.
    const std::vector<AblationRow> done(rows.begin(), rows.begin() + i + 1);
    write_report(done, recipe, command, out, seconds_since(start));
  }
  std::cout << "report: " << (out / "report.md").string() << "\n";
  return 0;
}

}  // namespace vg::tools
