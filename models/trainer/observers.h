// The observers of a training run: each does one thing a real run needs, beside the step.
// Added to a Trainer in this order: DivergenceGuard, Evaluator, MetricsLog, ProgressLine,
// Checkpointer (the log and the checkpointer read what the evaluator found).
#pragma once

#include <chrono>
#include <fstream>
#include <iosfwd>
#include <string>

#include "models/trainer/trainer.h"

namespace vg {

// Stops a run whose loss, auxiliary loss or gradient norm is not finite, with one error
// naming the step and the last good checkpoint, before the update can spoil the weights.
class DivergenceGuard : public TrainObserver {
 public:
  void on_loss(const Run& run, int64_t step, double loss, double aux) override;
  void on_grad_norm(const Run& run, int64_t step, double norm) override;
};

// Throws the guard's error: "training diverged at step N: <what>; <last good checkpoint>".
[[noreturn]] void diverged(const Run& run, int64_t step, const std::string& what);

// At the end of every epoch and of the run: the test set's loss and accuracy (and the
// EMA's accuracy), with the epoch's training figures, into report.epoch_report and
// run.last_eval.
class Evaluator : public TrainObserver {
 public:
  void on_step(Run& run, StepReport& report) override;

 private:
  Tally epoch_;
};

// metrics.jsonl: a "step" record every --log-every steps (and at the last step) with the
// window's loss, accuracy and images/s, and an "epoch" record after each evaluation.
// Every line is flushed as it is written; a write that fails (a full disk) leaves the file
// with whole lines only and stops the run.
class MetricsLog : public TrainObserver {
 public:
  void on_start(Run& run) override;
  void on_step(Run& run, StepReport& report) override;

 private:
  void write(const Run& run, const nlohmann::json& record);

  std::string path_;
  std::ofstream out_;
  uintmax_t whole_size_ = 0;  // the file's size up to its last whole line
  Tally window_;
  double window_seconds_ = 0;  // the time of the window's steps only
  std::chrono::steady_clock::time_point start_;
};

// The progress line on `out`: epoch, step, the loss and accuracy since the last line,
// images/s and the time left; on a terminal one line rewritten in place every
// `refresh_seconds` (whatever --log-every is), otherwise a line every --log-every steps.
// A line per epoch with its evaluation.
class ProgressLine : public TrainObserver {
 public:
  ProgressLine(std::ostream& out, bool tty, double refresh_seconds = 0.25)
      : out_(out), tty_(tty), refresh_seconds_(refresh_seconds) {}
  void on_start(Run& run) override;
  void on_step(Run& run, StepReport& report) override;

 private:
  void print_line(const Run& run, const StepReport& report);

  std::ostream& out_;
  bool tty_;
  double refresh_seconds_;
  std::chrono::steady_clock::time_point last_line_;
  Tally window_;
  double window_seconds_ = 0;
  int64_t first_step_ = 0;
  std::chrono::steady_clock::time_point start_;
};

// best.json whenever the test accuracy improves, last.json (and step-<N>.json) every
// --save-every steps and when the loop ends, as --keep asks. A checkpoint at step s holds everything up to s (records and
// evaluation included), so a run resumed from it repeats nothing and misses nothing.
class Checkpointer : public TrainObserver {
 public:
  void on_step(Run& run, StepReport& report) override;
  void on_end(Run& run) override;
  // Writes <out>/`file` atomically; weights or moments that are not finite cannot be saved,
  // the run has diverged and the previous checkpoint stays as it was.
  static void save(Run& run, const std::string& file);
};

}  // namespace vg
