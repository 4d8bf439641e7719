#include "models/trainer/trainer.h"

#include <chrono>

#include "engine/autograd/autograd.h"
#include "engine/ops/ops.h"
#include "engine/optim/clip.h"

namespace vg {

Trainer::Trainer(Run& run) : run_(run), params_(run.model->named_parameters()) {}

template <class F>
auto Trainer::in_step(int64_t step, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    if (!anomaly_enabled()) throw;
    throw Error(cat_str(e.what(), " at step ", step, "; ", last_good(run_)));
  }
}

StepReport Trainer::step() {
  const TrainOptions& o = run_.options;
  StepReport r;
  r.step = run_.step + 1;
  r.lr = run_.lr_at(run_.step);
  run_.optimizer->set_lr(r.lr);
  const int64_t step_images =
      std::min(run_.loader->samples_left_in_epoch(), o.accum * run_.loader->batch_size());
  for (int64_t micro = 0; micro < o.accum && !r.epoch_ended; ++micro) {
    const data::Batch batch = run_.loader->next();
    const MicroBatchLoss loss = in_step(r.step, [&] { return run_.loss(*run_.model, batch); });
    for (TrainObserver* ob : observers_) ob->on_loss(run_, r.step, loss.value, loss.aux);
    const int64_t n = static_cast<int64_t>(batch.labels.size());
    const double share = double(n) / double(step_images);
    in_step(r.step, [&] { (o.accum > 1 ? mul(loss.total, share) : loss.total).backward(); });
    r.micro_batches.push_back({loss.value, count_correct(loss.logits, batch.labels), n});
    r.aux_loss += loss.aux;
    r.epoch = batch.epoch;
    r.epoch_ended = batch.last_in_epoch;
  }
  r.aux_loss /= double(r.micro_batches.size());
  r.grad_norm = o.clip > 0 ? optim::clip_grad_norm(params_, o.clip) : optim::grad_norm(params_);
  for (TrainObserver* ob : observers_) ob->on_grad_norm(run_, r.step, r.grad_norm);
  run_.optimizer->step();
  run_.optimizer->zero_grad();
  if (run_.ema) run_.ema->update(*run_.model);
  run_.step = r.step;
  return r;
}

void Trainer::fit(const std::function<bool()>& stop) {
  run_.model->train();
  for (TrainObserver* ob : observers_) ob->on_start(run_);
  while (run_.step < run_.total_steps && !(stop && stop())) {
    const auto start = std::chrono::steady_clock::now();
    StepReport report = step();
    report.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (TrainObserver* ob : observers_) ob->on_step(run_, report);
  }
  for (TrainObserver* ob : observers_) ob->on_end(run_);
}

}  // namespace vg
