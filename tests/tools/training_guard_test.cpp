// A run that goes non-finite stops with one line naming the step and keeps its last good
// checkpoint; `--detect-anomaly` names the op and the block where the first NaN/Inf appears.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "engine/io/checkpoint.h"
#include "tests/tools/cli_helpers.h"

using nlohmann::json;
using vg::testing::read_text;
using vg::testing::scratch_dir;
using vg::testing::vitgrad;
namespace fs = std::filesystem;

namespace {

const std::string kTiny =
    "--data synthetic --synthetic-size 100 --depth 2 --dim 16 --heads 2 "
    "--batch 20 --threads 1 ";

// The lines of `err` that vitgrad wrote as an error (progress lines do not start so).
std::vector<std::string> error_lines(const std::string& err) {
  std::vector<std::string> out;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("vitgrad", 0) == 0) out.push_back(line);
  return out;
}

// A checkpoint of a freshly trained tiny run with every weight of `name` set to `value`.
std::string with_weights(const fs::path& dir, const std::string& name, double value) {
  const fs::path run = dir / ("src_" + std::to_string(std::hash<std::string>{}(name)));
  if (!fs::exists(run / "last.json")) {
    const auto r = vitgrad("train " + kTiny + "--steps 1 --out " + run.string());
    REQUIRE(r.exit_code == 0);
  }
  json c = json::parse(read_text(run / "last.json"));
  REQUIRE(c["model"].contains(name));
  // Written as numbers whatever the tensor's size (a checkpoint reads both forms).
  json& entry = c["model"][name];
  int64_t numel = 1;
  for (const json& d : entry["shape"]) numel *= d.get<int64_t>();
  entry.erase("base64");
  entry["data"] = std::vector<double>(static_cast<size_t>(numel), value);
  const fs::path out = dir / (name + ".json");
  std::ofstream(out) << c.dump();
  return out.string();
}

}  // namespace

TEST_CASE(
    "a diverging run stops at the step whose loss is NaN and keeps the last good checkpoint") {
  const fs::path dir = scratch_dir("diverge");
  const fs::path run = dir / "run";
  // Plain SGD at a learning rate of 100 blows up within a few steps.
  const auto r = vitgrad("train " + kTiny +
                         "--opt sgd --lr 100 --sched constant --steps 30 "
                         "--save-every 1 --out " +
                         run.string());
  CHECK(r.exit_code == 2);
  const auto errors = error_lines(r.err);
  REQUIRE(errors.size() == 1);
  INFO(errors[0]);
  std::smatch m;
  REQUIRE(std::regex_search(
      errors[0], m,
      std::regex(R"(training diverged at step (\d+): the loss is (NaN|Inf|-Inf); )"
                 R"(the last good checkpoint is (.*) \(step (\d+)\)$)")));
  const int64_t step = std::stoll(m[1]);
  CHECK(step > 1);
  CHECK(m[3] == (run / "last.json").string());
  CHECK(std::stoll(m[4]) == step - 1);
  // The checkpoint of the step before is whole, holds only finite values (the loader
  // refuses anything else) and resumes; the weights it holds are the ones that then blew up.
  CHECK(vg::load_checkpoint((run / "last.json").string()).step == step - 1);
  const auto again = vitgrad("train --resume " + (run / "last.json").string());
  CHECK(again.exit_code == 2);
  CHECK(again.err.find("training diverged at step " + std::to_string(step) + ": ") !=
        std::string::npos);
  CHECK(r.out.empty());  // no summary of a run that did not finish
}

TEST_CASE("a run that diverges before its first save says there is no checkpoint") {
  const fs::path dir = scratch_dir("diverge_early");
  const std::string init = with_weights(dir, "blocks.1.attn.qkv.weight", 3e38);
  const auto r = vitgrad(
      "train --data synthetic --synthetic-size 100 --batch 20 --threads 1 "
      "--steps 3 --init " +
      init + " --out " + (dir / "run").string());
  CHECK(r.exit_code == 2);
  const auto errors = error_lines(r.err);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("training diverged at step 1: ") != std::string::npos);
  CHECK(errors[0].find("no checkpoint was saved yet") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "run" / "last.json"));
}

namespace {

// The one error line of a short --detect-anomaly run started from `init`.
std::string anomaly_line(const fs::path& dir, const std::string& init) {
  const auto r = vitgrad(
      "train --data synthetic --synthetic-size 100 --batch 20 --threads 1 "
      "--steps 3 --detect-anomaly --init " +
      init + " --out " + (dir / "run").string());
  CHECK(r.exit_code == 2);
  const auto errors = error_lines(r.err);
  REQUIRE(errors.size() == 1);
  return errors[0];
}

}  // namespace

TEST_CASE("--detect-anomaly names the block of an overflow in the forward pass") {
  const fs::path dir = scratch_dir("anomaly_forward");
  // qkv's inputs are normalised, so 3e38 weights overflow its output at once. Its first
  // element is Inf or NaN by the order the product's kernel adds in (a sum that meets both
  // +Inf and -Inf is NaN), so either names the overflow.
  const std::string line = anomaly_line(dir, with_weights(dir, "blocks.1.attn.qkv.weight", 3e38));
  INFO(line);
  const std::string where = " in the forward of layer_norm_linear in blocks.1.attn.qkv";
  CHECK((line.find("anomaly: Inf" + where) != std::string::npos ||
         line.find("anomaly: NaN" + where) != std::string::npos));
  CHECK(line.find("at step 1; no checkpoint was saved yet") != std::string::npos);
}

TEST_CASE("--detect-anomaly names the block of an overflow in the backward pass") {
  const fs::path dir = scratch_dir("anomaly_backward");
  // proj's inputs are small: its output stays finite, the gradient through it does not.
  const std::string line = anomaly_line(dir, with_weights(dir, "blocks.0.attn.proj.weight", 3e37));
  INFO(line);
  CHECK(line.find("anomaly: ") != std::string::npos);
  CHECK(line.find(" in the backward") != std::string::npos);
  CHECK(line.find(" in blocks.0.") != std::string::npos);
}
