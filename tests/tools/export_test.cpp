// `vitgrad export`: a weights-only checkpoint evaluates like the run it came from, starts
// a new run with --init, cannot be resumed, and every misuse is one line and exit code 2.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_helpers.h"

using nlohmann::json;
using vg::testing::read_text;
using vg::testing::scratch_dir;
using vg::testing::vitgrad;
namespace fs = std::filesystem;

TEST_CASE("export keeps config and weights only; eval and --init read it") {
  const fs::path dir = scratch_dir("export");
  const std::string run = (dir / "run").string(), ck = run + "/last.json";
  auto r = vitgrad(
      "train --data synthetic --depth 1 --dim 16 --heads 2 --batch 50 "
      "--steps 4 --ema 0.9 --dropout 0.1 --threads 1 --out " +
      run);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);

  const std::string weights = (dir / "weights.json").string();
  r = vitgrad("export " + ck + " -o " + weights);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("wrote " + weights) != std::string::npos);
  const json full = json::parse(read_text(ck)), exported = json::parse(read_text(weights));
  CHECK(exported["format"] == "vitgrad-checkpoint");
  CHECK(exported["config"] == full["config"]);
  CHECK(exported["model"] == full["model"]);  // the same numbers, to the bit
  CHECK(exported["optimizer"].is_null());
  CHECK(exported["scheduler"].is_null());
  CHECK(exported["rng"].empty());
  CHECK(exported["step"] == 4);
  CHECK(read_text(weights).size() < read_text(ck).size() / 2);  // no moments, no EMA copy

  // The export evaluates exactly like the full checkpoint (on the data named explicitly,
  // since an export does not know the run's data set).
  const std::string eval = " --data synthetic --json --threads 1";
  r = vitgrad("eval " + ck + eval);
  REQUIRE(r.exit_code == 0);
  const json a = json::parse(r.out);
  r = vitgrad("eval " + weights + eval);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json b = json::parse(r.out);
  CHECK(a == b);
  // ... image by image: --predictions writes every predicted class, one a line.
  const std::string pa = (dir / "a.txt").string(), pb = (dir / "b.txt").string();
  REQUIRE(vitgrad("eval " + ck + eval + " --predictions " + pa).exit_code == 0);
  REQUIRE(vitgrad("eval " + weights + eval + " --predictions " + pb).exit_code == 0);
  const std::string predicted = read_text(pa);
  CHECK(predicted == read_text(pb));
  CHECK(std::count(predicted.begin(), predicted.end(), '\n') == a["count"].get<int64_t>());
  std::istringstream classes(predicted);
  for (int label; classes >> label;) CHECK((label >= 0 && label < 10));

  // --ema exports the shadow weights instead.
  const std::string ema = (dir / "ema.json").string();
  r = vitgrad("export " + ck + " --ema -o " + ema);
  REQUIRE(r.exit_code == 0);
  const json exported_ema = json::parse(read_text(ema));
  CHECK(exported_ema["model"] == full["extra"]["ema"]);
  CHECK(exported_ema["model"] != full["model"]);

  // A new run starts from the export; resuming it is refused.
  r = vitgrad("train --init " + weights +
              " --data synthetic --batch 50 "
              "--steps 1 --threads 1 --out " +
              (dir / "init").string());
  INFO(r.err);
  CHECK(r.exit_code == 0);
  r = vitgrad("train --resume " + weights);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("weights-only checkpoint cannot be resumed") != std::string::npos);

  // Misuse: one line on stderr, exit code 2.
  const std::vector<std::pair<std::string, std::string>> misuse = {
      {"export", "expected 1 positional argument"},
      {"export " + ck, "-o OUT is required"},
      {"export " + ck + " -o " + ck, "is the checkpoint itself"},
      {"export " + weights + " --ema -o " + (dir / "x.json").string(),
       "extra entry 'ema' is missing"},
      {"export /nonexistent.json -o " + (dir / "y.json").string(),
       "/nonexistent.json: cannot open"},
      {"export " + ck + " -o /nonexistent/dir/z.json", "cannot write"},
  };
  for (const auto& [args, message] : misuse) {
    r = vitgrad(args);
    INFO("vitgrad ", args, "\nstderr: ", r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(message) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  r = vitgrad("export --help");
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind("usage: vitgrad export", 0) == 0);
  fs::remove_all(dir);
}
