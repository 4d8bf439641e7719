// kill -9 at any moment loses nothing: last.json is replaced atomically, so a killed run
// always leaves a loadable checkpoint, and resuming from it (again and again) ends with the
// same bits as a run that was never interrupted: weights, optimiser, generators, losses.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>

#include "engine/io/checkpoint.h"
#include "tests/tools/cli_helpers.h"

using vg::testing::read_text;
using vg::testing::scratch_dir;
using vg::testing::vitgrad;
namespace fs = std::filesystem;

namespace {

constexpr int kSteps = 40;
// Saves at every step (a save is in progress most of the time), an evaluation and best.json
// every 10 steps, dropout, drop-path and augmentation drawing from their generators.
const std::string kRecipe =
    "train --data synthetic --synthetic-size 200 --depth 2 --dim 16 --heads 2 --batch 20 "
    "--dropout 0.1 --drop-path 0.1 --threads 1 --log-every 1 --save-every 1 --seed 3 ";

// `vitgrad ARGS` started in the background, output discarded.
pid_t start(const std::string& args) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string command =
        "exec " + std::string(VG_VITGRAD_EXE) + " " + args + " >/dev/null 2>&1 </dev/null";
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// The step of `dir`/last.json, or -1 while there is none.
int64_t saved_step(const fs::path& dir) {
  if (!fs::exists(dir / "last.json")) return -1;
  return vg::load_checkpoint((dir / "last.json").string()).step;
}

// Which file last.json is: a rename puts a new one in its place.
ino_t identity(const fs::path& file) {
  struct stat s {};
  return ::stat(file.c_str(), &s) == 0 ? s.st_ino : 0;
}

bool save_in_progress(const fs::path& dir) {
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().rfind(".last.json.tmp.", 0) == 0) return true;
  return false;
}

// Waits until `moment` says it is time, then kills the process with SIGKILL. Returns false
// when the run ended by itself first (or after two minutes on a very slow machine).
template <class Moment>
bool kill_when(pid_t pid, Moment moment) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return false;
    if (moment()) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return false;
}

// Every step record's loss, by step; a step logged twice is an error.
std::map<int64_t, double> losses_by_step(const fs::path& metrics) {
  std::map<int64_t, double> out;
  std::istringstream lines(read_text(metrics));
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j["kind"] != "step") continue;
    const int64_t step = j["step"].get<int64_t>();
    CHECK_MESSAGE(!out.count(step), "step ", step, " logged twice");
    out[step] = j["loss"].get<double>();
  }
  return out;
}

}  // namespace

TEST_CASE("kill -9 during saves, resume each time: the same bits as an uninterrupted run") {
  const fs::path dir = scratch_dir("kill_resume");
  const fs::path whole = dir / "whole", killed = dir / "killed";
  const auto reference =
      vitgrad(kRecipe + "--steps " + std::to_string(kSteps) + " --out " + whole.string());
  INFO(reference.err);
  REQUIRE(reference.exit_code == 0);

  // Three kills at different moments: in the middle of writing a checkpoint, right after
  // one was replaced, and at some step while training.
  const std::string resume = "train --resume " + (killed / "last.json").string() +
                             " --threads 1 --steps " + std::to_string(kSteps);
  pid_t pid = start(kRecipe + "--steps " + std::to_string(kSteps) + " --out " + killed.string());
  int64_t before = -1;
  // A save takes milliseconds (it waits for the disk); on a disk fast enough that polling
  // never catches one, the kill lands half a second after the first save instead.
  std::optional<std::chrono::steady_clock::time_point> first_save;
  bool during_save = false;
  CHECK(kill_when(pid, [&] {
    if (!fs::exists(killed / "last.json")) return false;
    if (!first_save) first_save = std::chrono::steady_clock::now();
    during_save = save_in_progress(killed);
    return during_save ||
           std::chrono::steady_clock::now() - *first_save > std::chrono::milliseconds(500);
  }));
  INFO("the first kill landed ", during_save ? "during a save" : "between saves");
  for (int round = 0; round < 3; ++round) {
    INFO("after kill ", round + 1);
    // Whatever the moment, last.json is whole and loadable.
    const int64_t step = saved_step(killed);
    REQUIRE(step >= 1);
    CHECK(step >= before);
    before = step;
    if (round == 2) break;
    pid = start(resume);
    const ino_t old = identity(killed / "last.json");
    const auto size = fs::file_size(killed / "metrics.jsonl");
    if (round == 0)  // right after last.json was replaced
      CHECK(kill_when(pid, [&] { return identity(killed / "last.json") != old; }));
    else  // a few steps later, wherever the run is
      CHECK(kill_when(pid, [&] { return fs::file_size(killed / "metrics.jsonl") > size + 600; }));
  }
  CHECK(before < kSteps);
  const auto finished = vitgrad(resume);
  INFO(finished.err);
  REQUIRE(finished.exit_code == 0);

  const auto a = nlohmann::json::parse(read_text(whole / "last.json"));
  const auto b = nlohmann::json::parse(read_text(killed / "last.json"));
  CHECK(b["step"] == kSteps);
  for (const char* part : {"model", "optimizer", "rng", "data", "scheduler"}) {
    INFO(part);
    CHECK(a[part] == b[part]);
  }
  CHECK(a["extra"]["best_test_accuracy"] == b["extra"]["best_test_accuracy"]);
  const auto la = losses_by_step(whole / "metrics.jsonl");
  const auto lb = losses_by_step(killed / "metrics.jsonl");
  REQUIRE(la.size() == kSteps);
  REQUIRE(lb.size() == kSteps);
  for (int64_t s = 1; s <= kSteps; ++s) CHECK(la.at(s) == lb.at(s));
  // No temporary file of a killed save stays behind.
  CHECK_FALSE(save_in_progress(killed));
}

namespace {

// Waits until `dir`/metrics.jsonl has its first record (the run is training).
bool wait_for_first_record(const fs::path& dir, pid_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < deadline) {
    if (fs::exists(dir / "metrics.jsonl") && fs::file_size(dir / "metrics.jsonl") > 0) return true;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return false;
}

// Kills `pid` with SIGKILL `delay` after now, unless it ended first. Returns whether it did.
bool kill_after(pid_t pid, std::chrono::microseconds delay) {
  const auto at = std::chrono::steady_clock::now() + delay;
  int status = 0;
  while (std::chrono::steady_clock::now() < at) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

}  // namespace

TEST_CASE(
    "crash campaign: kill -9 at 30 random moments, the folder always resumes to the same bits") {
  constexpr int kShort = 12;
  // Small enough that thirty kills and resumes take seconds; a save at every step, an
  // evaluation every 3 steps, dropout and augmentation drawing from their generators.
  const std::string recipe =
      "train --data synthetic --synthetic-size 30 --depth 1 --dim 8 --heads 2 --batch 10 "
      "--dropout 0.1 --threads 1 --log-every 1 --save-every 1 --seed 5 --steps " +
      std::to_string(kShort) + " ";
  const fs::path dir = scratch_dir("crash_campaign");
  // The reference, uninterrupted; its training time (from its first record) bounds the moments.
  const pid_t first = start(recipe + "--out " + (dir / "whole").string());
  REQUIRE(wait_for_first_record(dir / "whole", first));
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  ::waitpid(first, &status, 0);
  REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  const auto run_time =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  const auto whole = nlohmann::json::parse(read_text(dir / "whole" / "last.json"));
  const auto whole_losses = losses_by_step(dir / "whole" / "metrics.jsonl");
  REQUIRE(whole_losses.size() == kShort);

  std::mt19937 rng(2024);
  std::uniform_int_distribution<int64_t> moment(0, run_time.count());
  int kills = 0, resumed = 0, runs = 0;
  while (resumed < 30 && runs < 200) {
    const fs::path run = dir / ("run" + std::to_string(runs++));
    pid_t pid = start(recipe + "--out " + run.string());
    if (!wait_for_first_record(run, pid)) continue;  // it ended before training: no moment
    if (!kill_after(pid, std::chrono::microseconds(moment(rng)))) continue;
    ++kills;
    // A run killed before its first checkpoint has nothing to resume; it starts over.
    if (!fs::exists(run / "last.json")) continue;
    ++resumed;
    const std::string resume = "train --resume " + (run / "last.json").string() + " --threads 1";
    // Every other time, the resumed run is killed too.
    if (kills % 2 == 0) {
      pid = start(resume);
      if (kill_after(pid, std::chrono::microseconds(moment(rng) / 2))) ++kills;
    }
    INFO("run ", run.string(), " killed at step ", saved_step(run));
    const auto finished = vitgrad(resume);
    INFO(finished.err);
    REQUIRE(finished.exit_code == 0);
    const auto b = nlohmann::json::parse(read_text(run / "last.json"));
    CHECK(b["step"] == kShort);
    for (const char* part : {"model", "optimizer", "rng", "data", "scheduler"}) {
      INFO(part);
      CHECK((whole[part] == b[part]));
    }
    CHECK(whole["extra"]["best_test_accuracy"] == b["extra"]["best_test_accuracy"]);
    CHECK(losses_by_step(run / "metrics.jsonl") == whole_losses);
    CHECK_FALSE(save_in_progress(run));
    fs::remove_all(run);
  }
  MESSAGE(kills, " kills over ", runs, " runs, ", resumed, " of them resumed and checked");
  CHECK(resumed >= 30);
}
