#include <filesystem>

#include "models/trainer/observers.h"

namespace vg {

void Checkpointer::save(Run& run, const std::string& file) {
  Checkpoint snap;
  try {
    snap = snapshot(run);
  } catch (const Error& e) {
    diverged(run, run.step, e.what());
  }
  const std::string path = (std::filesystem::path(run.out_dir) / file).string();
  try {
    save_checkpoint(path, snap);
  } catch (const Error& e) {  // a full disk: the previous file is untouched
    throw Error(cat_str("could not save step ", run.step, ": ", e.what(), "; ", last_good(run)));
  }
  if (file == "last.json") {
    run.saved_step = run.step;
    run.saved_path = path;
  }
}

void Checkpointer::on_step(Run& run, StepReport& r) {
  if (r.epoch_report && r.epoch_report->test.accuracy > run.best_accuracy) {
    run.best_accuracy = r.epoch_report->test.accuracy;
    save(run, "best.json");
  }
  const int64_t every = run.options.save_every;
  if (every > 0 && run.step % every == 0 && run.step < run.total_steps) save(run, "last.json");
}

void Checkpointer::on_end(Run& run) {
  save(run, "last.json");
}

}  // namespace vg
