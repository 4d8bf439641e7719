// No user action loses a run: a resume from an older checkpoint branches into a new folder,
// Ctrl-C and SIGTERM save before they stop, a full disk keeps the last good checkpoint,
// and what a run cannot do well (a schedule extended past its end, a warmup as long as the
// run) is said in one line.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "engine/io/checkpoint.h"
#include "tests/tools/cli_helpers.h"

using nlohmann::json;
using vg::testing::read_text;
using vg::testing::scratch_dir;
using vg::testing::vitgrad;
namespace fs = std::filesystem;

namespace {

const std::string kTiny =
    "--data synthetic --synthetic-size 200 --depth 1 --dim 16 --heads 2 --batch 20 "
    "--threads 1 ";

int64_t step_of(const fs::path& checkpoint) {
  return vg::load_checkpoint(checkpoint.string()).step;
}

// Every line of a metrics file parses; returns how many there are.
int64_t parsed_lines(const fs::path& metrics) {
  std::istringstream lines(read_text(metrics));
  int64_t n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    INFO("line ", n + 1, ": ", line);
    CHECK_FALSE(json::parse(line, nullptr, false).is_discarded());
  }
  return n;
}

// `vitgrad ARGS` in the background, its stderr in `err`.
pid_t start(const std::string& args, const fs::path& err) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string command = "exec " + std::string(VG_VITGRAD_EXE) + " " + args +
                                " >/dev/null 2>" + err.string() + " </dev/null";
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// Waits until `dir`/metrics.jsonl holds a record (the run is training), at most a minute.
bool wait_for_training(const fs::path& dir) {
  for (int i = 0; i < 6000; ++i) {
    if (fs::exists(dir / "metrics.jsonl") && fs::file_size(dir / "metrics.jsonl") > 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

int exit_code(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST_CASE("resuming a checkpoint behind the run's latest continues in a new folder") {
  const fs::path dir = scratch_dir("branch");
  const fs::path run = dir / "run";
  REQUIRE(vitgrad("train " + kTiny + "--steps 10 --save-every 5 --out " + run.string()).exit_code ==
          0);
  fs::copy_file(run / "last.json", run / "step10.json");
  REQUIRE(vitgrad("train --resume " + (run / "last.json").string() + " --steps 20").exit_code == 0);
  const std::string last = read_text(run / "last.json"), metrics = read_text(run / "metrics.jsonl");
  REQUIRE(step_of(run / "last.json") == 20);

  // --out naming the run's own folder would overwrite its later steps: refused.
  const auto refused =
      vitgrad("train --resume " + (run / "step10.json").string() + " --out " + run.string());
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("would overwrite") != std::string::npos);

  const auto r = vitgrad("train --resume " + (run / "step10.json").string() + " --steps 20");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const fs::path branch = dir / "run-from-step10";
  CHECK(r.err.find("continuing in a new run folder, " + branch.string()) != std::string::npos);
  // The later checkpoint and metrics are as they were; the branch repeats them bit for bit.
  CHECK(read_text(run / "last.json") == last);
  CHECK(read_text(run / "metrics.jsonl") == metrics);
  REQUIRE(fs::exists(branch / "last.json"));
  const json a = json::parse(last), b = json::parse(read_text(branch / "last.json"));
  for (const char* part : {"model", "optimizer", "rng", "data", "scheduler", "step"}) {
    INFO(part);
    CHECK((a[part] == b[part]));
  }
  CHECK(read_text(branch / "metrics.jsonl").size() > 0);
  CHECK(fs::exists(branch / "config.json"));
}

TEST_CASE("SIGINT and SIGTERM finish the step, save last.json, say how to resume, exit 130/143") {
  for (const int sig : {SIGINT, SIGTERM}) {
    INFO("signal ", sig);
    const fs::path dir = scratch_dir("signal_" + std::to_string(sig));
    const fs::path run = dir / "run", err = dir / "err.txt";
    const pid_t pid =
        start("train " + kTiny + "--steps 1000000 --log-every 1 --out " + run.string(), err);
    REQUIRE(wait_for_training(run));
    ::kill(pid, sig);
    CHECK(exit_code(pid) == 128 + sig);
    const std::string text = read_text(err);
    INFO(text);
    CHECK(text.find("Resume with: vitgrad train --resume " + (run / "last.json").string()) !=
          std::string::npos);
    // last.json holds the step the metrics end at: nothing done is lost, nothing is twice.
    REQUIRE(fs::exists(run / "last.json"));
    const int64_t step = step_of(run / "last.json");
    CHECK(step >= 1);
    int64_t last_logged = 0;
    std::istringstream lines(read_text(run / "metrics.jsonl"));
    for (std::string line; std::getline(lines, line);)
      last_logged = json::parse(line)["step"].get<int64_t>();
    CHECK(last_logged == step);
    const auto resumed = vitgrad("train --resume " + (run / "last.json").string() + " --steps " +
                                 std::to_string(step + 3));
    CHECK(resumed.exit_code == 0);
  }
}

TEST_CASE("a second SIGINT ends the run at once and keeps the last good checkpoint") {
  const fs::path dir = scratch_dir("signal_twice");
  const fs::path run = dir / "run", err = dir / "err.txt";
  // Steps long enough (a wider model, one thread) for the second signal to land in one.
  const pid_t pid = start(
      "train --data synthetic --synthetic-size 400 --depth 4 --dim 96 --heads 4 --batch 200 "
      "--threads 1 --steps 100000 --log-every 1 --save-every 2 --out " +
          run.string(),
      err);
  REQUIRE(wait_for_training(run));
  while (!fs::exists(run / "last.json")) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ::kill(pid, SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ::kill(pid, SIGINT);
  CHECK(exit_code(pid) == 130);
  // Usually the second signal lands inside the step and no "stopped by" line follows; either
  // way last.json is a whole checkpoint that resumes (a save cut short left only a temporary
  // file, which the resume removes).
  const int64_t step = step_of(run / "last.json");
  CHECK(step >= 2);
  const auto resumed = vitgrad("train --resume " + (run / "last.json").string() + " --steps " +
                               std::to_string(step + 1));
  CHECK(resumed.exit_code == 0);
}

TEST_CASE("one-line warnings: warmup as long as the run, a finished schedule extended") {
  const fs::path dir = scratch_dir("warnings");
  const auto warm =
      vitgrad("train " + kTiny + "--steps 5 --warmup 5 --out " + (dir / "a").string());
  CHECK(warm.exit_code == 0);
  CHECK(warm.err.find("warning: --warmup 5 is not shorter than the run (5 steps)") !=
        std::string::npos);
  const auto plain = vitgrad("train " + kTiny + "--steps 5 --out " + (dir / "b").string());
  CHECK(plain.err.find("warning:") == std::string::npos);
  const auto longer =
      vitgrad("train --resume " + (dir / "b" / "last.json").string() + " --steps 8");
  CHECK(longer.exit_code == 0);
  CHECK(longer.err.find("warning: the learning-rate schedule ended at step 5") !=
        std::string::npos);
}

TEST_CASE("a resume with no steps left prints the checkpoint's accuracy, not 0.00%") {
  const fs::path dir = scratch_dir("zero_steps");
  const auto r = vitgrad("train " + kTiny + "--steps 10 --out " + (dir / "run").string());
  REQUIRE(r.exit_code == 0);
  std::smatch m;
  REQUIRE(std::regex_search(r.out, m, std::regex("\ntest accuracy: ([0-9.]+)%")));
  const auto again = vitgrad("train --resume " + (dir / "run" / "last.json").string());
  INFO(again.out);
  CHECK(again.exit_code == 0);
  CHECK(again.out.find("\ntest accuracy: " + m[1].str() + "%") != std::string::npos);
}

TEST_CASE("a full disk stops the run with one line and keeps what was whole") {
  const fs::path dir = scratch_dir("full_disk");
  // A file-size limit stands for the full disk; the shell ignores SIGXFSZ so a write fails
  // with an error instead of killing the process.
  const std::string limited = "trap '' XFSZ; ulimit -f 8;";
  SUBCASE("metrics.jsonl fills up: whole lines only") {
    const auto r = vitgrad(
        "train --data synthetic --synthetic-size 2000 --depth 1 --dim 16 "
        "--heads 2 --batch 20 --threads 1 --steps 90 --log-every 1 --out " +
            (dir / "m").string(),
        limited);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("metrics.jsonl: cannot write") != std::string::npos);
    CHECK(parsed_lines(dir / "m" / "metrics.jsonl") > 5);
  }
  SUBCASE("a checkpoint does not fit: the previous one stays") {
    const fs::path run = dir / "c";
    REQUIRE(vitgrad("train " + kTiny + "--steps 10 --out " + run.string()).exit_code == 0);
    const std::string last = read_text(run / "last.json");
    const auto r = vitgrad(
        "train --resume " + (run / "last.json").string() + " --steps 20 --save-every 5", limited);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("could not save step ") != std::string::npos);
    CHECK(r.err.find("the last good checkpoint is " + (run / "last.json").string() +
                     " (step 10)") != std::string::npos);
    CHECK(read_text(run / "last.json") == last);
    parsed_lines(run / "metrics.jsonl");
    for (const auto& entry : fs::directory_iterator(run))
      CHECK(entry.path().filename().string().find(".tmp.") == std::string::npos);
  }
}

TEST_CASE("a folder whose run saved no checkpoint is not offered for --resume") {
  const fs::path dir = scratch_dir("no_checkpoint");
  fs::create_directories(dir / "run");
  std::ofstream(dir / "run" / "config.json") << "{}";
  const auto r = vitgrad("train " + kTiny + "--steps 1 --out " + (dir / "run").string());
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("already holds a run (config.json): it saved no checkpoint to resume") !=
        std::string::npos);
  CHECK(r.err.find("--resume") == std::string::npos);
}
