#include <chrono>

#include "models/trainer/observers.h"

namespace vg {

void Evaluator::on_step(Run& run, StepReport& report) {
  epoch_.add(report);
  if (!report.epoch_ended && run.step != run.total_steps) return;
  const auto start = std::chrono::steady_clock::now();
  const int64_t batch = run.options.eval_batch;
  EpochReport e;
  e.epoch = report.epoch + 1;
  e.train_loss = epoch_.mean_loss();
  e.train_accuracy = epoch_.accuracy();
  e.test = evaluate(*run.model, *run.test_set, batch);
  run.model->train();
  if (run.ema) e.ema_accuracy = evaluate(run.ema->model(), *run.test_set, batch).accuracy;
  e.eval_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.last_eval = e.test;
  run.last_ema_accuracy = e.ema_accuracy;
  report.epoch_report = e;
  epoch_ = Tally{};
}

}  // namespace vg
