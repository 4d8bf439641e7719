// A run: everything a training run holds (model, optimiser, schedule, data, EMA, where it is
// and where it writes), built by one function whether it starts fresh, from another run's
// weights (--init) or continues a checkpoint (--resume). A checkpoint is its snapshot.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "engine/data/loader.h"
#include "engine/io/checkpoint.h"
#include "engine/optim/optimizer.h"
#include "models/ema.h"
#include "models/trainer/loss.h"
#include "models/trainer/schedule.h"
#include "models/training.h"

namespace vg {

struct Run {
  TrainOptions options;
  std::unique_ptr<ViT> model;
  std::unique_ptr<optim::Optimizer> optimizer;
  std::optional<RunSchedule> schedule;
  LossFn loss;
  std::shared_ptr<const data::Dataset> train_set, test_set;  // padded to the model's img_size
  std::unique_ptr<data::Loader> loader;                      // reads *train_set
  std::unique_ptr<ModelEma> ema;
  int64_t step = 0, total_steps = 0, steps_per_epoch = 1;
  double best_accuracy = -1;
  std::optional<EvalResult> last_eval;  // the latest evaluation on the test set
  std::optional<double> last_ema_accuracy;  // and the EMA weights' accuracy then
  int64_t saved_step = -1;              // the step of the last good last.json, -1: none yet
  std::string saved_path;
  std::string out_dir;

  double lr_at(int64_t s) const { return schedule->lr_at(s, steps_per_epoch); }
};

// Where a run's state comes from besides its options.
struct RunSource {
  const Checkpoint* init = nullptr;    // weights (and model config) to start from
  const Checkpoint* resume = nullptr;  // the whole state to continue from
  std::string path{};                  // the checkpoint's file, for messages
  // A program's own data (any data::Dataset) to train and evaluate on, instead of the data
  // the options name; both or neither. A checkpoint of such a run resumes with them again.
  std::shared_ptr<const data::Dataset> train_set = nullptr, test_set = nullptr;
};

// Builds the run `options` describe: the model (seeded, then given `from.init`'s weights),
// the data (from.train_set and test_set, or loaded as the options say, normalised as
// `from.resume` records) and loader, the optimiser, the schedule, the loss and the EMA;
// with `from.resume`, every part is then restored from it (all or nothing). total_steps 0:
// the options' --steps, or --epochs whole epochs.
std::unique_ptr<Run> build_run(const TrainOptions& options, int64_t total_steps,
                               const RunSource& from = {});

// What a resumable checkpoint says of its run besides its state: the run's options, its
// planned total of steps, its best and latest test results. Errors name `path`.
struct SavedRun {
  TrainOptions options;
  int64_t total_steps = 0;
  double best_accuracy = -1;
  std::optional<EvalResult> last_eval;
};
SavedRun read_saved_run(const Checkpoint& checkpoint, const std::string& path);

// The whole state of `run` as a checkpoint (the weights and moments must be finite).
Checkpoint snapshot(const Run& run);

// "the last good checkpoint is <path> (step N)", or that none was saved yet.
std::string last_good(const Run& run);

}  // namespace vg
