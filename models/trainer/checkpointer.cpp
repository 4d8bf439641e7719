#include <filesystem>
#include <string>
#include <vector>

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
  if (file != "best.json") {
    run.saved_step = run.step;
    run.saved_path = path;
  }
}

namespace {

// What a save point writes, as --keep asks: last.json and/or step-<N>.json. A run stopped
// early (by a signal) always writes last.json, which its message offers to resume from.
std::vector<std::string> save_point_files(const Run& run, bool stopped_early) {
  std::vector<std::string> files;
  if (run.options.keeps("last") || stopped_early) files.push_back("last.json");
  if (run.options.keeps("steps")) files.push_back(cat_str("step-", run.step, ".json"));
  return files;
}

}  // namespace

void Checkpointer::on_step(Run& run, StepReport& r) {
  if (r.epoch_report && r.epoch_report->test.accuracy > run.best_accuracy) {
    run.best_accuracy = r.epoch_report->test.accuracy;
    if (run.options.keeps("best")) save(run, "best.json");
  }
  const int64_t every = run.options.save_every;
  if (every > 0 && run.step % every == 0 && run.step < run.total_steps)
    for (const std::string& file : save_point_files(run, false)) save(run, file);
}

void Checkpointer::on_end(Run& run) {
  for (const std::string& file : save_point_files(run, run.step < run.total_steps))
    save(run, file);
}

}  // namespace vg
