// The Trainer: the training step of a run, and the loop that repeats it while observers
// do everything else a run needs (metrics log, progress line, evaluation, checkpoints,
// divergence guard; models/trainer/observers.h), each testable alone.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "models/trainer/run.h"

namespace vg {

// One micro-batch's figures.
struct MicroBatchFigures {
  double loss = 0;  // its mean cross-entropy
  int64_t correct = 0, images = 0;
};

// The end of an epoch: its training figures and the evaluation on the test set.
struct EpochReport {
  int64_t epoch = 0;  // 1-based: the epoch that has just ended
  double train_loss = 0, train_accuracy = 0;
  EvalResult test;
  std::optional<double> ema_accuracy;
  double eval_seconds = 0;
};

// What one optimiser step did.
struct StepReport {
  int64_t step = 0;   // 1-based: the step just taken
  int64_t epoch = 0;  // 0-based: the epoch its micro-batches came from
  bool epoch_ended = false;
  double lr = 0, grad_norm = 0;
  std::vector<MicroBatchFigures> micro_batches;
  double aux_loss = 0;  // the mean of the micro-batches' auxiliary losses
  double seconds = 0;   // spent in step(): data, forward, backward and update
  // Filled in by the Evaluator when the step ends an epoch (or the run); the observers
  // added after it see it.
  std::optional<EpochReport> epoch_report;
};

// Sums over the micro-batches of a window of steps or an epoch.
struct Tally {
  double loss = 0, correct = 0, count = 0;
  void add(const StepReport& r) {
    for (const MicroBatchFigures& m : r.micro_batches) {
      loss += m.loss * double(m.images);
      correct += double(m.correct);
      count += double(m.images);
    }
  }
  double mean_loss() const { return count ? loss / count : 0; }
  double accuracy() const { return count ? correct / count : 0; }
};

class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  virtual void on_start(Run& run) {}
  // One micro-batch's losses, before its backward pass.
  virtual void on_loss(const Run& run, int64_t step, double loss, double aux) {}
  // The step's gradient norm, before the update.
  virtual void on_grad_norm(const Run& run, int64_t step, double norm) {}
  // After the update, in the order the observers were added.
  virtual void on_step(Run& run, StepReport& report) {}
  // The loop has ended: the run is complete, or it was asked to stop.
  virtual void on_end(Run& run) {}
};

class Trainer {
 public:
  explicit Trainer(Run& run);
  // Observers are told of events in the order they were added; they must outlive fit().
  void add(TrainObserver& observer) { observers_.push_back(&observer); }

  // One optimiser step over options.accum micro-batches. A step's micro-batches never run
  // past the end of an epoch (its last step may have fewer, as in timm), and each one's mean
  // loss is weighted by its share of the step's images, so the gradient is the mean over
  // them all, as one big batch would give it.
  StepReport step();
  // Steps until the run's total, or until `stop` (checked between steps) says so.
  void fit(const std::function<bool()>& stop = nullptr);

 private:
  // Runs f(); with --detect-anomaly, an error it throws gains the step and the last good
  // checkpoint.
  template <class F>
  auto in_step(int64_t step, F&& f);

  Run& run_;
  ParameterList params_;
  std::vector<TrainObserver*> observers_;
};

}  // namespace vg
