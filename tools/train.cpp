// `vitgrad train` and `vitgrad eval`.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "engine/autograd/autograd.h"
#include "engine/core/parallel.h"
#include "engine/io/checkpoint.h"
#include "engine/io/safetensors.h"
#include "engine/kernels/matmul_precision.h"
#include "engine/kernels/precision_choice.h"
#include "engine/ops/ops.h"
#include "models/restore.h"
#include "models/run_data.h"
#include "models/trainer/stop_signals.h"
#include "models/training.h"
#include "tools/args.h"
#include "tools/model_flags.h"
#include "tools/train_flags.h"

namespace vg::tools {
namespace {

std::vector<Flag> train_flags() {
  std::vector<Flag> flags = model_flags();
  const std::vector<Flag> recipe = recipe_flags();
  flags.insert(flags.end(), recipe.begin(), recipe.end());
  const std::vector<Flag> own = {
      {"--threads", "N", "threads for kernels and OpenBLAS (default: all cores)"},
      {"--ema", "D", "also keep a model EMA with decay D and evaluate it"},
      {"--init", "CKPT", "start from a checkpoint's config and weights (fresh optimiser)"},
      {"--resume", "CKPT", "continue a run exactly where its checkpoint stopped"},
      {"--out", "DIR", "run folder (default runs/<date-time>)"},
      {"--save-every", "N", "write last.json every N steps (default: at the end)"},
      {"--keep", "LIST",
       "checkpoints to keep: last,best (default), steps (step-N.json at each save)"},
      {"--log-every", "N", "steps between metrics records (default 50)"},
      {"--detect-anomaly", "", "check every op's output and gradient for NaN/Inf (slower)"},
  };
  flags.insert(flags.end(), own.begin(), own.end());
  return flags;
}

// "images" (N, H, W, C) as the model sees them and "logits" (N, num_classes), so that other
// engines can be checked against vitgrad on the very same inputs.
void save_images_and_logits(const std::string& path, ViT& model, const data::Dataset& data,
                            int64_t batch) {
  NoGradGuard no_grad;
  model.eval();
  std::vector<Tensor> images, logits;
  for (const data::Batch& b : data::InOrder(data, batch)) {
    images.push_back(b.images);
    logits.push_back(model.forward(b.images));
  }
  SafeTensors file;
  file.tensors = {{"images", cat(images, 0)}, {"logits", cat(logits, 0)}};
  save_safetensors(path, file);
}

// A resumed run keeps its model and recipe; only how long and where may change.
TrainResult resume_run(ArgParser& args, bool tty) {
  for (const Flag& f : train_flags())
    if (args.has(f.name) && f.name != "--resume" && f.name != "--steps" && f.name != "--out" &&
        f.name != "--save-every" && f.name != "--threads" && f.name != "--detect-anomaly")
      args.fail(f.name +
                " cannot be changed when resuming (only --steps, --out, "
                "--save-every, --threads and --detect-anomaly can)");
  return resume(args.text("--resume"), args.integer("--steps", 0, 1, INT64_MAX / 2),
                args.text("--out"), args.integer("--save-every", -1, 0, INT64_MAX / 2), std::cerr,
                tty);
}

// A recipe preset (fmnist-ls-recipe) or a run's config.json brings its training options; the
// flags override them, and the model comes from the flags or from --init's checkpoint.
TrainOptions fresh_run_options(ArgParser& args, bool tty) {
  TrainOptions o = recipe_defaults(args);
  recipe_from_flags(args, o);
  if (args.has("--init")) {
    for (const Flag& f : model_flags())
      if (args.has(f.name))
        args.fail(f.name + " cannot be combined with --init (the model comes from the checkpoint)");
  } else {
    const data::DataShape data = training_data_shape(o);  // the model is made for the data
    o.model = model_from_flags(args, &data);
  }
  o.ema = args.number("--ema", o.ema, 0, 0.999999);
  o.init = args.text("--init", o.init);
  o.out = args.text("--out");
  o.save_every = args.integer("--save-every", o.save_every, 0, INT64_MAX / 2);
  o.keep = args.text("--keep", o.keep);
  o.log_every = args.integer("--log-every", o.log_every, 1, INT64_MAX / 2);
  o.progress_tty = tty;
  try {
    o.validate();
  } catch (const Error& e) {
    args.fail(e.what());
  }
  return o;
}

void print_percent(const char* what, double fraction) {
  std::cout << what << std::setprecision(2) << 100 * fraction << "%\n";
}

// The summary on stdout; a run stopped by a signal says on stderr how to resume it, and its
// exit code names the signal.
int report_run(const TrainResult& result, bool tty) {
  std::cout << "steps: " << result.steps << "  time: " << std::fixed << std::setprecision(1)
            << result.seconds << " s  run: " << result.out_dir << "\n";
  // A run (or a resume with no steps left) that has never been evaluated prints no accuracy.
  if (result.best_test_accuracy >= 0)
    print_percent("best test accuracy: ", result.best_test_accuracy);
  if (result.evaluated) print_percent("test accuracy: ", result.test_accuracy);
  if (result.ema_test_accuracy >= 0) print_percent("EMA test accuracy: ", result.ema_test_accuracy);
  if (!result.signal) return 0;
  const std::string last = (std::filesystem::path(result.out_dir) / "last.json").string();
  std::cerr << (tty ? "\n" : "") << "stopped by " << signal_name(result.signal) << " at step "
            << result.steps << "; saved " << last << ". Resume with: vitgrad train --resume "
            << last << "\n";
  return 128 + result.signal;  // 130 for SIGINT, 143 for SIGTERM
}

}  // namespace

int run_train(const std::vector<std::string>& argv) {
  ArgParser args("train", "vitgrad train [--preset NAME | --config FILE] [model flags] [options]",
                 train_flags());
  recipe_aliases(args);
  model_aliases(args);
  args.parse(argv);
  if (args.help_requested()) {
    std::cout << args.help();
    return 0;
  }
  threads_from_flags(args);
  const bool tty = ::isatty(STDERR_FILENO);
  // The first NaN or Inf names its op and module ("blocks.2.attn.proj") instead of
  // surfacing later as a diverged loss.
  AnomalyGuard anomaly(args.on("--detect-anomaly"));
  const TrainResult result =
      args.has("--resume") ? resume_run(args, tty) : train(fresh_run_options(args, tty), std::cerr);
  return report_run(result, tty);
}

namespace {

std::vector<Flag> eval_flags() {
  return {{"--data", "NAME", "fashion-mnist | synthetic | idx (default: the run's)"},
          {"--data-dir", "DIR", "folder with the IDX files (alone: the run's data, or idx)"},
          {"--split", "NAME", "test (default) | train"},
          {"--batch", "N", "images per forward pass (default 500)"},
          {"--threads", "N", "threads for kernels and OpenBLAS"},
          {"--tta", "KIND",
           "test-time augmentation: none (default) | flip (mean of the image's "
           "and its mirror's logits)"},
          {"--amp", "MODE",
           "fp32 (default) | bf16: matrix products on bf16 operands, as a run with --amp bf16 "
           "evaluates after each epoch | auto: bf16 where the CPU's bf16 units outrun its fmas, "
           "else fp32"},
          {"--json", "", "print one JSON line {loss, accuracy, count}"},
          {"--predictions", "FILE", "write the predicted class of every image, one a line"},
          {"--logits", "FILE",
           "write the images and their logits as .safetensors (for the "
           "check scripts of tools/)"}};
}

// The run's data options (a weights-only export has none: Fashion-MNIST, or IDX files), with
// the data flags applied.
TrainOptions eval_data_options(ArgParser& args, const Checkpoint& c, const ViTConfig& config,
                               const std::string& path) {
  TrainOptions o;
  o.model = config;  // its image size decides any padding of the data
  const bool run_options = c.extra.contains("train");
  if (run_options) {
    try {
      o = TrainOptions::from_json(c.extra.at("train"), config);
    } catch (const Error& e) {
      throw Error(path + ": extra entry 'train': " + e.what());
    }
  }
  // Files given with --data-dir are the run's kind of files, or IDX files of any shape.
  const bool files = run_options && o.data != "synthetic";
  o.data = args.choice("--data", args.has("--data-dir") && !files ? "idx" : o.data,
                       {"fashion-mnist", "synthetic", "idx"});
  o.data_dir = args.text("--data-dir", o.data_dir);
  if (o.data == "idx" && o.data_dir.empty()) args.fail("--data idx needs --data-dir");
  return o;
}

void write_predictions(const std::string& path, const std::vector<int32_t>& predictions) {
  std::string lines;
  for (int32_t p : predictions) lines += std::to_string(p) + "\n";
  write_file_atomically(path, lines);
}

void print_eval(const EvalResult& r, const std::string& split, bool json) {
  if (json) {
    std::cout << nlohmann::ordered_json{{"loss", r.loss},
                                        {"accuracy", r.accuracy},
                                        {"count", r.count}}
                     .dump()
              << "\n";
    return;
  }
  // The accuracy line last, alone: `make run` ends with it and scripts can grep it.
  std::cout << split << " loss: " << std::fixed << std::setprecision(4) << r.loss << " over "
            << r.count << " images\n"
            << split << " accuracy: " << std::setprecision(2) << 100 * r.accuracy << "%\n";
}

}  // namespace

int run_eval(const std::vector<std::string>& argv) {
  ArgParser args("eval",
                 "vitgrad eval CKPT [--data-dir DIR] [--split test|train] [--tta flip] "
                 "[--amp bf16] [--json] [--predictions FILE]",
                 eval_flags(), 1, 1);
  args.parse(argv);
  if (args.help_requested()) {
    std::cout << args.help();
    return 0;
  }
  threads_from_flags(args);
  const MatmulPrecisionGuard amp(
      parse_matmul_precision(args.choice("--amp", "fp32", {"fp32", "bf16", "auto"}), "--amp"));
  const std::string split = args.choice("--split", "test", {"test", "train"});
  const bool tta_flip = args.choice("--tta", "none", {"none", "flip"}) == "flip";
  const int64_t batch = args.integer("--batch", 500, 1, 65536);
  const std::string path = args.positionals()[0];
  const Checkpoint c = load_checkpoint(path);
  const ViTConfig config = checkpoint_config(c, path);
  ViT model(config);
  restore_checkpoint(c, path, {.model = &model});
  const TrainOptions o = eval_data_options(args, c, config, path);
  // Normalised as in training (the checkpoint records it), never by the statistics of
  // whatever data is evaluated.
  const std::shared_ptr<const data::Dataset> data =
      fit_data_to_model(load_dataset(o, split, checkpoint_normalisation(c, path)), config);
  std::vector<int32_t> predictions;
  const EvalResult r =
      evaluate(model, *data, batch, args.has("--predictions") ? &predictions : nullptr, tta_flip);
  if (args.has("--predictions")) write_predictions(args.text("--predictions"), predictions);
  if (args.has("--logits")) save_images_and_logits(args.text("--logits"), model, *data, batch);
  print_eval(r, split, args.on("--json"));
  return 0;
}

}  // namespace vg::tools
