#include "models/training.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>

#include "engine/autograd/autograd.h"
#include "engine/data/loader.h"
#include "engine/io/checkpoint.h"
#include "engine/io/json_tensor.h"
#include "engine/ops/ops.h"
#include "engine/optim/adamw.h"
#include "engine/optim/clip.h"
#include "engine/optim/lamb.h"
#include "engine/optim/schedule.h"
#include "engine/optim/sgd.h"
#include "models/ema.h"
#include "models/restore.h"
#include "models/run_folder.h"

namespace vg {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::unique_ptr<optim::Optimizer> make_optimizer(const TrainOptions& o, const ViT& model) {
  auto groups = optim::param_groups_weight_decay(model.named_parameters(), o.wd);
  if (o.opt == "sgd") return std::make_unique<optim::SGD>(std::move(groups), o.momentum);
  if (o.opt == "lamb") return std::make_unique<optim::Lamb>(std::move(groups));
  return std::make_unique<optim::AdamW>(std::move(groups));
}

// Everything one run holds; a checkpoint is its snapshot.
struct Run {
  TrainOptions options;
  std::unique_ptr<ViT> model;
  std::unique_ptr<optim::Optimizer> optimizer;
  std::optional<optim::Schedule> schedule;
  data::Dataset train_set, test_set;
  std::unique_ptr<data::Loader> loader;
  std::unique_ptr<ModelEma> ema;
  int64_t step = 0, total_steps = 0, steps_per_epoch = 1;
  double best_accuracy = -1;
  int64_t saved_step = -1;  // the step of the last good checkpoint, -1: none yet
  std::string saved_path;
  std::string out_dir;

  // The schedule's clock: optimiser steps, or epochs for the per-epoch LearnableScaler one.
  double lr_at(int64_t s) const {
    if (options.sched == "learnable-scaler") return schedule->lr(s / steps_per_epoch);
    return schedule->lr(s);
  }
};

optim::Schedule make_schedule(const Run& run) {
  const TrainOptions& o = run.options;
  if (o.sched == "constant") return optim::Schedule::constant(o.lr);
  if (o.sched == "step")  // a tenth of the rate at each third of the run
    return optim::Schedule::step(o.lr, std::max<int64_t>(1, run.total_steps / 3), 0.1);
  if (o.sched == "learnable-scaler") {
    const int64_t epochs = (run.total_steps + run.steps_per_epoch - 1) / run.steps_per_epoch;
    return optim::Schedule::learnable_scaler(o.lr, std::max<int64_t>(1, epochs), o.sched_factor,
                                             o.sched_threshold);
  }
  return optim::Schedule::cosine(o.lr, run.total_steps, std::min(o.min_lr, o.lr), o.warmup, 0.0);
}

void prepare_data(Run& run) {
  run.train_set = load_dataset(run.options, "train");
  run.test_set = load_dataset(run.options, "test");
  const ViTConfig& m = run.options.model;
  const Shape& s = run.train_set.images.shape();
  check(s[1] == m.img_size && s[2] == m.img_size && s[3] == m.in_chans &&
            run.train_set.num_classes <= m.num_classes,
        "the data (", run.train_set.name, ", images ", s[1], "x", s[2], "x", s[3], ", ",
        run.train_set.num_classes, " classes) does not fit the model (img_size ", m.img_size,
        ", in_chans ", m.in_chans, ", num_classes ", m.num_classes, ")");
  run.loader =
      std::make_unique<data::Loader>(run.train_set, run.options.batch, true, run.options.augment,
                                     data::derive_seed(run.options.seed, 1), run.options.crop);
  const int64_t batches = run.loader->batches_per_epoch();
  run.steps_per_epoch = std::max<int64_t>(1, (batches + run.options.accum - 1) / run.options.accum);
}

Checkpoint snapshot(const Run& run) {
  Checkpoint c;
  c.config = run.options.model.to_json();
  c.model = run.model->state_dict();
  c.optimizer = run.optimizer->state_to_json();
  c.scheduler = run.schedule->to_json();
  const data::LoaderState ls = run.loader->state();
  c.rng = {{"dropout", rng_to_json(run.model->dropout_rng().state())},
           {"augment", rng_to_json(ls.augment_rng)}};
  c.data = {{"epoch", ls.epoch}, {"cursor", ls.cursor}, {"seed", std::to_string(ls.seed)}};
  c.step = run.step;
  c.extra = {{"train", run.options.to_json()},
             {"total_steps", run.total_steps},
             {"best_test_accuracy", run.best_accuracy}};
  if (run.ema) {
    json ema = json::object();
    for (const auto& [name, t] : run.ema->model().state_dict()) ema[name] = tensor_to_json(t, name);
    c.extra["ema"] = std::move(ema);
  }
  return c;
}

// Where a diverged run can go back to, for the message that stops it.
std::string last_good(const Run& run) {
  if (run.saved_step < 0) return "no checkpoint was saved yet";
  return cat_str("the last good checkpoint is ", run.saved_path, " (step ", run.saved_step, ")");
}

// "NaN", "Inf", "-Inf" or the number.
std::string value_str(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Inf" : "-Inf";
  return cat_str(v);
}

// Stops a run whose step `step` went non-finite, saying where to go back to.
[[noreturn]] void diverged(const Run& run, int64_t step, const std::string& what) {
  throw Error(cat_str("training diverged at step ", step, ": ", what, "; ", last_good(run)));
}

void save(Run& run, const std::string& file) {
  // Only finite weights and optimiser state can be saved: when they are not, the run has
  // diverged and the previous checkpoint stays as it was.
  Checkpoint snap;
  try {
    snap = snapshot(run);
  } catch (const Error& e) {
    diverged(run, run.step, e.what());
  }
  const std::string path = (std::filesystem::path(run.out_dir) / file).string();
  save_checkpoint(path, snap);
  if (file == "last.json") {
    run.saved_step = run.step;
    run.saved_path = path;
  }
}

// Per-block mean |gamma| of every LayerScale and GRN, for the metrics and the plots.
json gamma_magnitudes(ViT& model, bool grn) {
  json out = json::object();
  for (const Parameter& p : model.named_parameters()) {
    const bool is_ls = p.name.find(".ls") != std::string::npos && p.name.ends_with(".gamma");
    const bool is_grn = p.name.find(".grn.gamma") != std::string::npos;
    if ((grn && !is_grn) || (!grn && !is_ls)) continue;
    out[p.name.substr(0, p.name.size() - 6)] = mean(abs(p.tensor.detach())).item();
  }
  return out;
}

std::string format_duration(double s) {
  std::ostringstream out;
  const int64_t t = static_cast<int64_t>(s + 0.5);
  if (t >= 3600)
    out << t / 3600 << "h" << std::setw(2) << std::setfill('0') << (t % 3600) / 60 << "m";
  else
    out << t / 60 << "m" << std::setw(2) << std::setfill('0') << t % 60 << "s";
  return out.str();
}

// Sums over the micro-batches of a log window or an epoch.
struct Tally {
  double loss = 0, correct = 0, count = 0, images = 0, seconds = 0;
  void add(double batch_loss, int64_t batch_correct, int64_t n) {
    loss += batch_loss * double(n);
    correct += double(batch_correct);
    count += double(n);
  }
  double mean_loss() const { return count ? loss / count : 0; }
  double accuracy() const { return count ? correct / count : 0; }
};

// Correct predictions (the first maximum wins a tie, as torch.argmax); each prediction is
// appended to `predictions` when given.
int64_t count_correct(const Tensor& logits, const std::vector<int32_t>& labels,
                      std::vector<int32_t>* predictions = nullptr) {
  const Tensor best = logits.detach().to(DType::f64);
  const int64_t K = logits.size(1);
  int64_t correct = 0;
  for (int64_t b = 0; b < logits.size(0); ++b) {
    const double* row = best.data<double>() + b * K;
    int64_t arg = 0;
    for (int64_t k = 1; k < K; ++k)
      if (row[k] > row[arg]) arg = k;
    correct += arg == labels[b];
    if (predictions) predictions->push_back(static_cast<int32_t>(arg));
  }
  return correct;
}

TrainResult loop(Run& run, std::ostream& log) {
  const TrainOptions& o = run.options;
  std::ofstream metrics(std::filesystem::path(run.out_dir) / "metrics.jsonl", std::ios::app);
  check(metrics.good(), run.out_dir, "/metrics.jsonl: cannot write");
  const ParameterList params = run.model->named_parameters();
  const auto start = Clock::now();
  const int64_t first_step = run.step;
  Tally window, epoch_tally;
  auto window_start = Clock::now();
  TrainResult result;
  result.out_dir = run.out_dir;
  run.model->train();

  while (run.step < run.total_steps) {
    const double lr = run.lr_at(run.step);
    run.optimizer->set_lr(lr);
    bool epoch_ended = false;
    double aux_sum = 0;  // the auxiliary losses of this step's micro-batches
    int64_t micro_batches = 0;
    int64_t epoch = 0;
    // A step's micro-batches never run past the end of an epoch (the epoch's last step may
    // have fewer, as in timm), and each one's mean loss is weighted by its share of the step's
    // images, so the gradient is the mean over them all, as one big batch would give it.
    const int64_t step_images =
        std::min(run.loader->samples_left_in_epoch(), o.accum * run.loader->batch_size());
    for (int64_t micro = 0; micro < o.accum && !epoch_ended; ++micro) {
      data::Batch batch = run.loader->next();
      epoch = batch.epoch;
      Tensor logits, loss, extra;
      double value = 0, extra_value = 0;
      try {
        logits = o.aux.any() ? run.model->forward(batch.images, o.aux, &extra)
                             : run.model->forward(batch.images);
        loss = cross_entropy(logits, batch.labels, o.label_smoothing);
        value = loss.item();
        if (extra.defined()) {
          extra_value = extra.item();
          loss = add(loss, extra);
        }
        const double share = double(batch.labels.size()) / double(step_images);
        if (std::isfinite(value) && std::isfinite(extra_value))
          (o.accum > 1 ? mul(loss, share) : loss).backward();
      } catch (const Error& e) {
        if (!anomaly_enabled()) throw;
        throw Error(cat_str(e.what(), " at step ", run.step + 1, "; ", last_good(run)));
      }
      if (!std::isfinite(value)) diverged(run, run.step + 1, "the loss is " + value_str(value));
      if (!std::isfinite(extra_value))
        diverged(run, run.step + 1, "the auxiliary loss is " + value_str(extra_value));
      aux_sum += extra_value;
      ++micro_batches;
      const int64_t correct = count_correct(logits, batch.labels);
      const int64_t n = static_cast<int64_t>(batch.labels.size());
      window.add(value, correct, n);
      epoch_tally.add(value, correct, n);
      epoch_ended = epoch_ended || batch.last_in_epoch;
    }
    const double norm =
        o.clip > 0 ? optim::clip_grad_norm(params, o.clip) : optim::grad_norm(params);
    if (!std::isfinite(norm))
      diverged(run, run.step + 1, "the gradient norm is " + value_str(norm));
    run.optimizer->step();
    run.optimizer->zero_grad();
    if (run.ema) run.ema->update(*run.model);
    run.step++;

    if (run.step % o.log_every == 0 || run.step == run.total_steps) {
      const double secs = seconds_since(window_start);
      const double ips = secs > 0 ? window.count / secs : 0;
      json record = {{"kind", "step"},
                     {"step", run.step},
                     {"epoch", epoch},
                     {"loss", window.mean_loss()},
                     {"accuracy", window.accuracy()},
                     {"lr", lr},
                     {"grad_norm", norm},
                     {"images_per_s", ips}};
      if (run.model->config().layerscale != "none" || run.model->block(0).has_layerscale())
        record["layerscale"] = gamma_magnitudes(*run.model, false);
      if (run.model->config().grn) record["grn"] = gamma_magnitudes(*run.model, true);
      if (o.aux.any()) record["aux_loss"] = aux_sum / double(micro_batches);  // of the last step
      metrics << record.dump() << "\n" << std::flush;
      const double done = double(run.step - first_step), left = double(run.total_steps - run.step);
      const double eta = done > 0 ? seconds_since(start) / done * left : 0;
      std::ostringstream line;
      line << "epoch " << epoch + 1 << "  step " << run.step << "/" << run.total_steps << "  loss "
           << std::fixed << std::setprecision(4) << window.mean_loss() << "  acc "
           << std::setprecision(2) << 100 * window.accuracy() << "%  " << std::setprecision(0)
           << ips << " img/s  ETA " << format_duration(eta);
      if (o.progress_tty)
        log << "\r" << line.str() << "\033[K" << std::flush;
      else
        log << line.str() << "\n" << std::flush;
      window = Tally{};
      window_start = Clock::now();
    }
    if (epoch_ended || run.step == run.total_steps) {
      const auto eval_start = Clock::now();
      const EvalResult test = evaluate(*run.model, run.test_set, o.eval_batch);
      run.model->train();
      json record = {{"kind", "epoch"},
                     {"step", run.step},
                     {"epoch", epoch + 1},
                     {"train_loss", epoch_tally.mean_loss()},
                     {"train_accuracy", epoch_tally.accuracy()},
                     {"test_loss", test.loss},
                     {"test_accuracy", test.accuracy},
                     {"lr", lr},
                     {"seconds", seconds_since(start)}};
      if (run.ema)
        record["ema_test_accuracy"] =
            evaluate(run.ema->model(), run.test_set, o.eval_batch).accuracy;
      metrics << record.dump() << "\n" << std::flush;
      if (o.progress_tty) log << "\n";
      log << "epoch " << epoch + 1 << " done: train loss " << std::fixed << std::setprecision(4)
          << epoch_tally.mean_loss() << ", test loss " << test.loss << ", test accuracy "
          << std::setprecision(2) << 100 * test.accuracy << "% (eval " << std::setprecision(1)
          << seconds_since(eval_start) << " s)\n"
          << std::flush;
      epoch_tally = Tally{};
      result.test_loss = test.loss;
      result.test_accuracy = test.accuracy;
      if (test.accuracy > run.best_accuracy) {
        run.best_accuracy = test.accuracy;
        save(run, "best.json");
      }
      window_start = Clock::now();  // evaluation time is not training time
    }
    // After the step's records and evaluation: a checkpoint at step s holds everything up
    // to s, so a run resumed from it repeats nothing and misses nothing.
    if (o.save_every > 0 && run.step % o.save_every == 0 && run.step < run.total_steps)
      save(run, "last.json");
  }
  save(run, "last.json");
  result.steps = run.step;
  result.best_test_accuracy = run.best_accuracy;
  result.seconds = seconds_since(start);
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

}  // namespace

data::Dataset load_dataset(const TrainOptions& o, const std::string& split) {
  if (o.data == "synthetic")
    return data::make_synthetic(split, split == "train" ? o.synthetic_train : o.synthetic_test,
                                o.seed);
  return data::load_fashion_mnist(o.data_dir.empty() ? data::kFashionMnistDir : o.data_dir, split);
}

EvalResult evaluate(ViT& model, const data::Dataset& data, int64_t batch_size,
                    std::vector<int32_t>* predictions) {
  NoGradGuard no_grad;
  model.eval();
  EvalResult r;
  double loss_sum = 0;
  int64_t correct = 0;
  for (const data::Batch& batch : data::InOrder(data, batch_size)) {
    Tensor logits = model.forward(batch.images);
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
  Run run;
  run.options = options;
  std::optional<Checkpoint> init;
  if (!options.init.empty()) {
    init = load_checkpoint(options.init);
    run.options.model = checkpoint_config(*init, options.init);
  }
  run.model = std::make_unique<ViT>(run.options.model, options.seed);
  if (init) restore_checkpoint(*init, options.init, {.model = run.model.get()});
  prepare_data(run);
  run.total_steps = options.steps > 0 ? options.steps : options.epochs * run.steps_per_epoch;
  run.optimizer = make_optimizer(run.options, *run.model);
  run.schedule = make_schedule(run);
  if (options.ema > 0) run.ema = std::make_unique<ModelEma>(*run.model, options.ema);
  run.out_dir = options.out.empty() ? default_out_dir() : options.out;
  const bool created = make_run_folder(run.out_dir, true);
  try {
    write_run_config(run);
  } catch (const Error&) {
    if (created) std::filesystem::remove_all(run.out_dir);  // no empty run folder stays behind
    throw;
  }
  log << "training " << run.model->num_parameters() << " parameters for " << run.total_steps
      << " steps (" << run.steps_per_epoch << " per epoch) on " << run.train_set.name
      << "; writing " << run.out_dir << "\n";
  return loop(run, log);
}

TrainResult resume(const std::string& path, int64_t total_steps, const std::string& out,
                   int64_t save_every, std::ostream& log, bool progress_tty) {
  const Checkpoint c = load_checkpoint(path);
  check(c.optimizer.is_object() && c.scheduler.is_object() && c.extra.contains("train"), path,
        ": a weights-only checkpoint cannot be resumed (use --init to start from it)");
  Run run;
  const ViTConfig config = checkpoint_config(c, path);
  try {
    run.options = TrainOptions::from_json(c.extra.at("train"), config);
  } catch (const Error& e) {
    throw Error(cat_str(path, ": extra entry 'train': ", e.what()));
  }
  const json& saved_total = c.extra.contains("total_steps") ? c.extra.at("total_steps") : json(0);
  check(saved_total.is_number_integer() && saved_total.get<int64_t>() >= 0, path,
        ": extra entry 'total_steps' must be an integer >= 0, got ", saved_total.dump());
  const json& best =
      c.extra.contains("best_test_accuracy") ? c.extra.at("best_test_accuracy") : json(-1.0);
  check(best.is_number(), path, ": extra entry 'best_test_accuracy' must be a number, got ",
        best.dump());
  run.options.progress_tty = progress_tty;
  if (save_every >= 0) run.options.save_every = save_every;
  run.total_steps = total_steps > 0 ? total_steps : saved_total.get<int64_t>();
  check(run.total_steps >= c.step, path, ": the checkpoint is at step ", c.step,
        ", past the requested total of ", run.total_steps, " steps");

  // Build the run as it was started, then restore every part of it (all or nothing).
  run.model = std::make_unique<ViT>(run.options.model, run.options.seed);
  prepare_data(run);
  run.optimizer = make_optimizer(run.options, *run.model);
  if (run.options.ema > 0) run.ema = std::make_unique<ModelEma>(*run.model, run.options.ema);
  restore_checkpoint(c, path,
                     {.model = run.model.get(),
                      .optimizer = run.optimizer.get(),
                      .schedule = &run.schedule,
                      .loader = run.loader.get(),
                      .dropout_rng = true,
                      .ema = run.ema.get()});
  run.step = c.step;
  run.best_accuracy = best.get<double>();
  run.saved_step = c.step;
  run.saved_path = path;
  run.out_dir = out.empty() ? std::filesystem::path(path).parent_path().string() : out;
  if (run.out_dir.empty()) run.out_dir = ".";
  make_run_folder(run.out_dir, false);
  remove_stale_temporaries(run.out_dir);
  trim_metrics(run.out_dir, run.step);
  log << "resuming " << path << " at step " << run.step << " of " << run.total_steps << "\n";
  return loop(run, log);
}

}  // namespace vg
