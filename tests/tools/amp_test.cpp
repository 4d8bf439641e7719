// `--amp bf16`: matrix products on bf16 operands with float sums, everything else float. A
// run follows fp32's losses closely, resumes bitwise, and a CPU without bf16 units gets one
// clear error.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "engine/kernels/matmul_precision.h"
#include "engine/kernels/precision_choice.h"
#include "tests/tools/cli_helpers.h"

using vg::testing::bf16_run_env;
using vg::testing::read_text;
using vg::testing::scratch_dir;
using vg::testing::vitgrad;
namespace fs = std::filesystem;

namespace {

bool have_bf16() {
  return vg::bf16_hardware() != vg::Bf16Hardware::none;
}

// What --amp auto picks here, as the rule of engine/kernels/precision_choice.h has it.
std::string auto_amp() {
  return vg::matmul_precision_name(vg::best_matmul_precision());
}

std::map<int64_t, double> losses_by_step(const fs::path& metrics) {
  std::map<int64_t, double> out;
  std::istringstream lines(read_text(metrics));
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j["kind"] == "step") out[j["step"].get<int64_t>()] = j["loss"].get<double>();
  }
  return out;
}

// The last epoch's record of a run, as its metrics log has it.
nlohmann::json last_epoch_record(const fs::path& metrics) {
  nlohmann::json last;
  std::istringstream lines(read_text(metrics));
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j["kind"] == "epoch") last = j;
  }
  return last;
}

// Trains 2 steps from a config file whose train section has "amp": amp; returns the "amp" the
// run's config.json recorded.
std::string amp_recorded_from_config_file(const fs::path& dir, const std::string& amp,
                                          const std::string& env = "") {
  fs::create_directories(dir);
  std::ofstream(dir / "recipe.json") << R"({"model": {"depth": 1, "embed_dim": 16, "num_heads": 2},
            "train": {"amp": ")" << amp
                                     << R"(", "data": "synthetic", "synthetic_train": 40,
                      "synthetic_test": 10, "batch": 20, "steps": 2}})";
  const auto r = vitgrad(
      "train --config " + (dir / "recipe.json").string() + " --out " + (dir / "run").string(), env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto config = nlohmann::json::parse(read_text(dir / "run" / "config.json"));
  return config["train"]["amp"].get<std::string>();
}

const std::string kRecipe =
    "train --data synthetic --synthetic-size 400 --depth 2 --dim 32 --heads 2 --batch 40 "
    "--layerscale 1e-4 --grn --opt adamw --lr 2e-3 --sched constant --log-every 1 --seed 3 "
    "--threads 2 ";

}  // namespace

TEST_CASE("a short run with --amp bf16 follows the fp32 run's losses") {
  const std::optional<std::string> env = bf16_run_env();
  if (!env) {
    MESSAGE("skipped: this CPU has neither bf16 units nor AVX2 and FMA");
    return;
  }
  const fs::path dir = scratch_dir("amp_follow");
  std::map<std::string, std::map<int64_t, double>> losses;
  for (const std::string amp : {"fp32", "bf16"}) {
    const auto r =
        vitgrad(kRecipe + "--steps 30 --amp " + amp + " --out " + (dir / amp).string(), *env);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    losses[amp] = losses_by_step(dir / amp / "metrics.jsonl");
    const auto config = nlohmann::json::parse(read_text(dir / amp / "config.json"));
    CHECK(config.dump().find("\"amp\":\"" + amp + "\"") != std::string::npos);
  }
  REQUIRE(losses["fp32"].size() == 30);
  REQUIRE(losses["bf16"].size() == 30);
  // Rounding the operands to bf16 moves each product by up to 2^-7 of its terms; over 30 AdamW
  // steps the two runs drift apart slowly (the largest gap measured here is 4e-4). The loss
  // starts near ln 10 = 2.3 and falls by about 0.5; a gap of 0.005 at any step would be a run
  // that trains differently.
  double worst = 0, first_gap = std::abs(losses["fp32"][1] - losses["bf16"][1]);
  for (const auto& [step, loss] : losses["fp32"])
    worst = std::max(worst, std::abs(loss - losses["bf16"].at(step)));
  INFO("largest loss gap ", worst, ", at step 1 ", first_gap);
  CHECK(worst < 0.005);
  CHECK(first_gap > 0);                                  // the products really were bf16
  CHECK(losses["bf16"][30] < losses["bf16"][1] - 0.05);  // and it learns
}

TEST_CASE("a config file's train section sets \"amp\": \"bf16\"") {
  const std::optional<std::string> env = bf16_run_env();
  if (!env) {
    MESSAGE("skipped: this CPU has neither bf16 units nor AVX2 and FMA");
    return;
  }
  CHECK(amp_recorded_from_config_file(scratch_dir("amp_config"), "bf16", *env) == "bf16");
}

TEST_CASE("train --amp bf16 N steps, resume, N more == 2N steps without stopping (bitwise)") {
  const std::optional<std::string> env = bf16_run_env();
  if (!env) {
    MESSAGE("skipped: this CPU has neither bf16 units nor AVX2 and FMA");
    return;
  }
  const fs::path dir = scratch_dir("amp_resume");
  const std::string recipe = kRecipe + "--amp bf16 --accum 2 --dropout 0.1 ";
  auto a = vitgrad(recipe + "--steps 6 --out " + (dir / "a").string(), *env);
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  auto first = vitgrad(recipe + "--steps 3 --out " + (dir / "c").string(), *env);
  REQUIRE(first.exit_code == 0);
  // --threads differs on purpose: the products give the same bits on any thread count.
  auto c = vitgrad(
      "train --resume " + (dir / "c" / "last.json").string() + " --steps 6 --threads 1", *env);
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  const auto ja = nlohmann::json::parse(read_text(dir / "a" / "last.json"));
  const auto jc = nlohmann::json::parse(read_text(dir / "c" / "last.json"));
  CHECK(jc["step"] == 6);
  for (const char* part : {"model", "optimizer", "rng", "data", "scheduler"}) {
    INFO(part);
    const bool same = ja[part] == jc[part];
    CHECK(same);
  }
  const auto la = losses_by_step(dir / "a" / "metrics.jsonl");
  const auto lc = losses_by_step(dir / "c" / "metrics.jsonl");
  for (int64_t step = 4; step <= 6; ++step) CHECK(la.at(step) == lc.at(step));
}

TEST_CASE("eval --amp bf16 gives the test loss a bf16 run logged for its last epoch, bit for bit") {
  const std::optional<std::string> env = bf16_run_env();
  if (!env) {
    MESSAGE("skipped: this CPU has neither bf16 units nor AVX2 and FMA");
    return;
  }
  const fs::path dir = scratch_dir("amp_eval");
  const auto r = vitgrad(kRecipe + "--epochs 1 --amp bf16 --out " + (dir / "run").string(), *env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json logged = last_epoch_record(dir / "run" / "metrics.jsonl");
  REQUIRE(logged.contains("test_loss"));
  const std::string eval = "eval " + (dir / "run" / "last.json").string() + " --json --amp ";
  auto eval_json = [&](const std::string& amp) {
    const auto e = vitgrad(eval + amp, *env);
    INFO(e.err);
    REQUIRE(e.exit_code == 0);
    return nlohmann::json::parse(e.out);
  };
  const auto bf16 = eval_json("bf16");
  CHECK(bf16.at("loss").get<double>() == logged.at("test_loss").get<double>());
  CHECK(bf16.at("accuracy").get<double>() == logged.at("test_accuracy").get<double>());
  // fp32 products give another loss, close to it.
  const auto fp32 = eval_json("fp32");
  CHECK(fp32.at("loss").get<double>() != logged.at("test_loss").get<double>());
  CHECK(std::abs(fp32.at("loss").get<double>() - logged.at("test_loss").get<double>()) < 1e-2);
}

TEST_CASE("bench --amp bf16 reports the bf16 GEMM peak beside the sgemm one") {
  const std::optional<std::string> env = bf16_run_env();
  if (!env) {
    MESSAGE("skipped: this CPU has neither bf16 units nor AVX2 and FMA");
    return;
  }
  const auto r = vitgrad(
      "bench --depth 2 --dim 16 --heads 2 --batch 8 --steps 3 --threads 2 --json --amp bf16", *env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("amp") == "bf16");
  CHECK(j.at("bf16_units") == (have_bf16() ? vg::bf16_hardware_name(vg::bf16_hardware()) : "fma"));
  CHECK(j.at("bf16_gemm_gflops").get<double>() > 0);
  CHECK(j.at("sgemm_gflops").get<double>() > 0);
  // The units' peak is AVX512-BF16's dot products', measured only where they run the products.
  const bool dot_products = have_bf16() && vg::bf16_hardware() == vg::Bf16Hardware::avx512_bf16;
  CHECK((j.at("units_peak_gflops").get<double>() > 0) == dot_products);
  CHECK(j.at("images_per_s_at_units_peak").is_null() == !dot_products);
  CHECK(j.at("heap_allocations_per_step").get<double>() == 0);
}

TEST_CASE(
    "train --amp auto runs bf16 where the CPU's bf16 units are the faster, fp32 elsewhere, and "
    "records which") {
  const fs::path dir = scratch_dir("amp_auto");
  for (const bool hide_units : {false, true}) {
    const fs::path out = dir / (hide_units ? "none" : "best");
    const auto r = vitgrad(kRecipe + "--steps 2 --amp auto --out " + out.string(),
                           hide_units ? "VITGRAD_BF16_UNITS=none" : "");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto config = nlohmann::json::parse(read_text(out / "config.json"));
    CHECK(config["train"]["amp"] == (hide_units ? "fp32" : auto_amp()));
  }
  // The same from a config file's train section; a stand-in for the units is never picked.
  CHECK(amp_recorded_from_config_file(dir, "auto") == auto_amp());
  CHECK(amp_recorded_from_config_file(dir / "stand_in", "auto", "VITGRAD_BF16_UNITS=fma") ==
        auto_amp());
}

TEST_CASE("--amp bf16 on a CPU without bf16 units, or a wrong --amp, is one clear error") {
  const fs::path dir = scratch_dir("amp_error");
  for (const std::string& command :
       {kRecipe + "--steps 2 --amp bf16 --out " + (dir / "t").string(),
        std::string("bench --depth 2 --dim 16 --heads 2 --batch 8 --steps 1 --amp bf16"),
        std::string("eval ") + (dir / "missing.json").string() + " --amp bf16",
        std::string("ablate --data synthetic --synthetic-size 40 --depth 1 --dim 16 --heads 2 "
                    "--batch 20 --steps 1 --amp bf16 --out ") +
            (dir / "a").string()}) {
    INFO(command);
    const auto r = vitgrad(command, "VITGRAD_BF16_UNITS=none");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("neither AVX512-BF16 nor AMX-BF16") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  CHECK(!fs::exists(dir / "t"));  // no run folder left behind
  const auto r = vitgrad(kRecipe + "--steps 2 --amp fp16");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--amp") != std::string::npos);
}
