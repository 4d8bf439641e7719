#include "models/training.h"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "engine/autograd/autograd.h"
#include "engine/io/checkpoint.h"
#include "engine/kernels/matmul_precision.h"
#include "engine/kernels/precision_choice.h"
#include "engine/ops/ops.h"
#include "models/run_folder.h"
#include "models/trainer/observers.h"
#include "models/trainer/run.h"
#include "models/trainer/stop_signals.h"
#include "models/weights_file.h"

namespace vg {
namespace {

using nlohmann::json;

// Steps `run` to its end with every observer a run from the command line has.
TrainResult fit(Run& run, std::ostream& log) {
  const MatmulPrecisionGuard amp(parse_matmul_precision(run.options.amp, "--amp"));
  const auto start = std::chrono::steady_clock::now();
  DivergenceGuard guard;
  Evaluator evaluator;
  MetricsLog metrics;
  ProgressLine progress(log, run.options.progress_tty);
  Checkpointer checkpointer;
  Trainer trainer(run);
  for (TrainObserver* o : std::initializer_list<TrainObserver*>{&guard, &evaluator, &metrics,
                                                                &progress, &checkpointer})
    trainer.add(*o);
  StopSignals signals;
  trainer.fit([&] { return signals.received() != 0; });
  TrainResult result;
  result.steps = run.step;
  result.signal = signals.received();
  if (run.last_eval) {
    result.evaluated = true;
    result.test_loss = run.last_eval->loss;
    result.test_accuracy = run.last_eval->accuracy;
  }
  if (run.last_ema_accuracy) result.ema_test_accuracy = *run.last_ema_accuracy;
  result.best_test_accuracy = run.best_accuracy;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.out_dir = run.out_dir;
  return result;
}

std::string default_out_dir() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::ostringstream name;
  name << "runs/" << std::put_time(&tm, "%Y%m%d-%H%M%S");
  return name.str();
}

void write_run_config(const Run& run) {
  json config = {{"model", run.options.model.to_json()}, {"train", run.options.to_json()}};
  write_file_atomically((std::filesystem::path(run.out_dir) / "config.json").string(),
                        config.dump(2) + "\n");
}

bool same_folder(const std::string& a, const std::string& b) {
  return std::filesystem::weakly_canonical(a) == std::filesystem::weakly_canonical(b);
}

// Where a resumed run writes: its own folder when the checkpoint is the folder's latest,
// else a new folder holding the history up to the checkpoint's step, so that the later
// checkpoints and metrics are never rewritten.
std::string continuation_folder(const std::string& path, int64_t step, const std::string& out,
                                std::ostream& log) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  const int64_t latest = latest_saved_step(dir);
  const bool in_place = out.empty() ? latest <= step : same_folder(out, dir);
  if (in_place) {
    check(latest <= step, dir, " goes on past step ", step, " (last.json is at step ", latest,
          "): resuming ", path, " there would overwrite it; give a new --out");
    make_run_folder(dir, false);
    remove_stale_temporaries(dir);
    return dir;
  }
  const std::string to = out.empty() ? branch_folder_name(dir, step) : out;
  make_run_folder(to, true);
  copy_run_history(dir, to, step);
  if (out.empty())
    log << path << " is at step " << step << " but " << dir << " goes on to step " << latest
        << ": continuing in a new run folder, " << to << "\n";
  return to;
}

// The batch's images mirrored left to right.
Tensor flipped(const Tensor& images) {
  const Shape& s = images.shape();
  Tensor out = Tensor::empty(s, DType::f32);
  const int64_t image_size = s[1] * s[2] * s[3];
  const std::vector<float> unused_pad(s[3]);  // a flip alone moves no pixel out of the image
  for (int64_t i = 0; i < s[0]; ++i)
    data::apply_augment(images.data<float>() + i * image_size, out.data<float>() + i * image_size,
                        s[1], s[2], s[3], data::Augment{0, 0, true}, unused_pad.data());
  return out;
}

}  // namespace

EvalResult evaluate(ViT& model, const data::Dataset& data, int64_t batch_size,
                    std::vector<int32_t>* predictions, bool tta_flip) {
  NoGradGuard no_grad;
  model.eval();
  EvalResult r;
  double loss_sum = 0;
  int64_t correct = 0;
  for (const data::Batch& batch : data::InOrder(data, batch_size)) {
    Tensor logits = model.forward(batch.images);
    if (tta_flip) logits = mul(add(logits, model.forward(flipped(batch.images))), 0.5);
    const int64_t n = static_cast<int64_t>(batch.labels.size());
    loss_sum += cross_entropy(logits, batch.labels).item() * double(n);
    correct += count_correct(logits, batch.labels, predictions);
    r.count += n;
  }
  r.loss = r.count ? loss_sum / double(r.count) : 0;
  r.accuracy = r.count ? double(correct) / double(r.count) : 0;
  return r;
}

TrainResult train(const TrainOptions& options, std::ostream& log) {
  options.validate();
  std::optional<Checkpoint> init;
  if (!options.init.empty()) init = load_weights(options.init);  // JSON or safetensors
  const std::unique_ptr<Run> run =
      build_run(options, 0, {.init = init ? &*init : nullptr, .path = options.init});
  run->out_dir = options.out.empty() ? default_out_dir() : options.out;
  const bool created = make_run_folder(run->out_dir, true);
  try {
    write_run_config(*run);
  } catch (const Error&) {
    if (created) std::filesystem::remove_all(run->out_dir);  // no empty run folder stays behind
    throw;
  }
  if (run->options.sched == "cosine" && run->options.warmup >= run->total_steps)
    log << "warning: --warmup " << run->options.warmup << " is not shorter than the run ("
        << run->total_steps << " steps): the learning rate never reaches --lr\n";
  log << "training " << run->model->num_parameters() << " parameters for " << run->total_steps
      << " steps (" << run->steps_per_epoch << " per epoch) on " << run->train_set->name()
      << "; writing " << run->out_dir << "\n";
  if (run->options.data == "idx")
    log << "pixels normalised with " << data::to_string(run->train_set->normalisation())
        << (run->options.data_mean.empty() ? " (the training split's statistics)" : "") << "\n";
  return fit(*run, log);
}

TrainResult resume(const std::string& path, int64_t total_steps, const std::string& out,
                   int64_t save_every, std::ostream& log, bool progress_tty) {
  const Checkpoint c = load_checkpoint(path);
  SavedRun saved = read_saved_run(c, path);
  saved.options.progress_tty = progress_tty;
  if (save_every >= 0) saved.options.save_every = save_every;
  const int64_t total = total_steps > 0 ? total_steps : saved.total_steps;
  check(total >= c.step, path, ": the checkpoint is at step ", c.step,
        ", past the requested total of ", total, " steps");
  // Build the run as it was started, then restore every part of it (all or nothing).
  const std::unique_ptr<Run> run = build_run(saved.options, total, {.resume = &c, .path = path});
  run->best_accuracy = saved.best_accuracy;
  run->last_eval = saved.last_eval;
  run->out_dir = continuation_folder(path, c.step, out, log);
  trim_metrics(run->out_dir, run->step);
  log << "resuming " << path << " at step " << run->step << " of " << run->total_steps << "\n";
  const int64_t floor = run->schedule->floor_step(run->steps_per_epoch);
  if (floor >= 0 && run->total_steps > std::max(floor, run->step))
    log << "warning: the learning-rate schedule ended at step " << floor
        << " (the run's planned length); steps " << std::max(floor, run->step) + 1 << " to "
        << run->total_steps << " train at its final rate " << run->lr_at(floor) << "\n";
  return fit(*run, log);
}

}  // namespace vg
