// The Trainer and its observers, each on its own, on a tiny run of synthetic data.
#include "models/trainer/trainer.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/core/error.h"
#include "models/trainer/observers.h"
#include "tests/scratch_dir.h"

using namespace vg;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::unique_ptr<Run> tiny_run(const std::string& name, int64_t accum = 1) {
  TrainOptions o;
  o.model.patch_size = 7;
  o.model.embed_dim = 8;
  o.model.depth = 1;
  o.model.num_heads = 2;
  o.data = "synthetic";
  o.synthetic_train = 30;
  o.synthetic_test = 10;
  o.batch = 10;
  o.accum = accum;
  o.steps = 6;
  o.log_every = 2;
  std::unique_ptr<Run> run = build_run(o, 0);
  run->out_dir = vg::testing::scratch_dir("trainer_" + name).string();
  return run;
}

// A step of 10 images that took `seconds`.
StepReport report(int64_t step, double seconds) {
  StepReport r;
  r.step = step;
  r.micro_batches = {{2.0, 5, 10}};
  r.seconds = seconds;
  return r;
}

std::vector<json> records(const Run& run) {
  std::vector<json> out;
  std::ifstream in(fs::path(run.out_dir) / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

}  // namespace

TEST_CASE("a step takes accum micro-batches, tells each loss, and moves the step on") {
  auto run = tiny_run("step", 3);
  struct Counter : TrainObserver {
    int losses = 0, norms = 0;
    void on_loss(const Run&, int64_t, double, double) override { ++losses; }
    void on_grad_norm(const Run&, int64_t, double) override { ++norms; }
  } counter;
  Trainer trainer(*run);
  trainer.add(counter);
  const StepReport r = trainer.step();
  CHECK(r.step == 1);
  CHECK(run->step == 1);
  CHECK(counter.losses == 3);
  CHECK(counter.norms == 1);
  REQUIRE(r.micro_batches.size() == 3);
  CHECK(r.epoch_ended);  // 30 images, 3 micro-batches of 10: one step is the epoch
  CHECK(std::isfinite(r.grad_norm));
  CHECK(r.lr == run->lr_at(0));
}

TEST_CASE("MetricsLog: images/s is the window's images over its steps' own time") {
  auto run = tiny_run("metrics");
  MetricsLog log;
  log.on_start(*run);
  StepReport a = report(1, 0.25), b = report(2, 0.75);
  // An evaluation (and a save) between the window's steps takes no part in it.
  b.epoch_report = EpochReport{};
  run->step = 1;
  log.on_step(*run, a);
  run->step = 2;
  log.on_step(*run, b);
  const std::vector<json> lines = records(*run);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0]["kind"] == "step");
  CHECK(lines[0]["images_per_s"] == 20.0);  // 20 images in 1 s of steps
  CHECK(lines[0]["loss"] == 2.0);
  CHECK(lines[0]["accuracy"] == 0.5);
  CHECK(lines[1]["kind"] == "epoch");
}

TEST_CASE("ProgressLine: on a terminal it refreshes on its timer, whatever --log-every is") {
  auto run = tiny_run("progress");
  run->options.log_every = 1000;
  const auto count_lines = [&](bool tty, double refresh) {
    std::ostringstream out;
    ProgressLine line(out, tty, refresh);
    run->step = 0;
    line.on_start(*run);
    for (int64_t s = 1; s <= 5; ++s) {
      run->step = s;
      StepReport r = report(s, 0.01);
      line.on_step(*run, r);
    }
    const std::string text = out.str();
    return std::count(text.begin(), text.end(), tty ? '\r' : '\n');
  };
  run->total_steps = 6;                // no step here is the last
  CHECK(count_lines(true, 0.0) == 5);  // every refresh is due
  CHECK(count_lines(true, 3600) == 0);
  CHECK(count_lines(false, 0.0) == 0);  // plain lines follow --log-every
  run->options.log_every = 2;
  CHECK(count_lines(false, 0.0) == 2);
}

TEST_CASE("DivergenceGuard names the step, the value and the last good checkpoint") {
  auto run = tiny_run("guard");
  DivergenceGuard guard;
  guard.on_loss(*run, 3, 1.5, 0.0);  // finite: nothing
  CHECK_THROWS_WITH_AS(guard.on_loss(*run, 3, NAN, 0.0),
                       "training diverged at step 3: the loss is NaN; no checkpoint was saved yet",
                       Error);
  run->saved_step = 2;
  run->saved_path = "r/last.json";
  CHECK_THROWS_WITH_AS(guard.on_grad_norm(*run, 4, INFINITY),
                       "training diverged at step 4: the gradient norm is Inf; the last good "
                       "checkpoint is r/last.json (step 2)",
                       Error);
  CHECK_THROWS_WITH_AS(guard.on_loss(*run, 4, 1.0, -INFINITY),
                       doctest::Contains("the auxiliary loss is -Inf"), Error);
}

TEST_CASE("Checkpointer: best.json when the accuracy improves, last.json every --save-every") {
  auto run = tiny_run("checkpointer");
  run->options.save_every = 2;
  Checkpointer checkpointer;
  const fs::path dir = run->out_dir;
  StepReport r = report(1, 0.1);
  r.epoch_report = EpochReport{};
  r.epoch_report->test.accuracy = 0.3;
  run->step = 1;
  checkpointer.on_step(*run, r);
  CHECK(fs::exists(dir / "best.json"));
  CHECK_FALSE(fs::exists(dir / "last.json"));
  CHECK(run->best_accuracy == 0.3);
  fs::remove(dir / "best.json");
  r = report(2, 0.1);
  r.epoch_report = EpochReport{};
  r.epoch_report->test.accuracy = 0.2;  // worse: no best.json
  run->step = 2;
  checkpointer.on_step(*run, r);
  CHECK_FALSE(fs::exists(dir / "best.json"));
  CHECK(fs::exists(dir / "last.json"));
  CHECK(run->saved_step == 2);
}
