// `vitgrad bench`: the JSON line carries sane numbers (never a timing threshold), a training
// step needs no new heap buffers after warm-up, and OPENBLAS_CORETYPE is handled as the
// README says.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "engine/kernels/blas.h"
#include "tests/tools/cli_helpers.h"

using vg::testing::vitgrad;

namespace {
const std::string kTiny = "bench --depth 2 --dim 16 --heads 2 --batch 8 --steps 3 --threads 2 ";

nlohmann::json bench_json(const std::string& extra, const std::string& env = "") {
  const auto r = vitgrad(kTiny + "--json " + extra, env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}
}  // namespace

TEST_CASE("bench --json reports consistent figures and no heap allocations after warm-up") {
  const nlohmann::json j = bench_json("--layerscale 1e-4 --grn");
  for (const char* key : {"images_per_s", "ms_per_step", "gflops", "sgemm_gflops", "peak_rss_mb",
                          "heap_allocations_per_step", "page_faults_per_step"})
    REQUIRE(j.at(key).is_number());
  CHECK(j.at("images_per_s").get<double>() > 0);
  // images/s and ms/step describe the same median step of 8 images.
  CHECK(j.at("images_per_s").get<double>() * j.at("ms_per_step").get<double>() / 1000 ==
        doctest::Approx(8).epsilon(1e-9));
  CHECK(j.at("gflops").get<double>() > 0);
  CHECK(j.at("sgemm_gflops").get<double>() > 0);
  // The units' peak allows at most batch * peak / (the step's product FLOPs) images/s, and no
  // step is faster than its products at that peak.
  const double units = j.at("units_peak_gflops").get<double>();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    REQUIRE(units > 0);
    const double product_gflop = j.at("gflops").get<double>() * j.at("ms_per_step").get<double>();
    CHECK(j.at("images_per_s_at_units_peak").get<double>() * product_gflop / 1000 ==
          doctest::Approx(8 * units).epsilon(1e-9));
    CHECK(j.at("images_per_s_at_units_peak").get<double>() > j.at("images_per_s").get<double>());
  }
  CHECK(j.at("peak_rss_mb").get<double>() > 1);
  CHECK(j.at("peak_rss_mb").get<double>() < 4096);
  CHECK(j.at("heap_allocations_per_step").get<double>() == 0);
  CHECK(j.at("threads") == 2);
  CHECK(j.at("batch") == 8);
  CHECK(!j.at("blas_core").get<std::string>().empty());
  // How the processors' time was shared during the timed steps (null where /proc/stat is
  // missing, or when the steps took less than a clock tick).
  if (!j.at("cpu_busy_percent").is_null()) {
    double total = 0;
    for (const char* key : {"cpu_busy_percent", "cpu_idle_percent", "cpu_steal_percent"}) {
      const double share = j.at(key).get<double>();
      CHECK(share >= 0);
      total += share;
    }
    CHECK(total == doctest::Approx(100.0));
  }
}

TEST_CASE("bench --profile lists the forward and backward of the ops") {
  const auto r = vitgrad(kTiny + "--profile");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const char* row : {"images/s: ", "matmul GFLOP/s: ", "peak RSS: ", "linear (backward)",
                          "layer_norm ", "qkv_attention (backward)", "optimiser"})
    CHECK(r.out.find(row) != std::string::npos);
}

TEST_CASE("bench misuse is one line and exit code 2") {
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"bench --steps 0", "--steps must be between 1"},
           {"bench --json --profile", "give --json or --profile, not both"},
           {"bench --batch x", "--batch expects a whole number"},
           {"bench --dim 30 --heads 4", "embed_dim 30 is not divisible by num_heads 4"}}) {
    const auto r = vitgrad(args);
    INFO("vitgrad ", args, "\nstderr: ", r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(message) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("OPENBLAS_CORETYPE: a narrower family is dropped unless VITGRAD_KEEP_CORETYPE is set") {
  const nlohmann::json kept = bench_json("", "OPENBLAS_CORETYPE=Haswell VITGRAD_KEEP_CORETYPE=1");
  CHECK(kept.at("blas_core") == "Haswell");
  const auto r = vitgrad(kTiny + "--json", "OPENBLAS_CORETYPE=Haswell");
  REQUIRE(r.exit_code == 0);
  const std::string core = nlohmann::json::parse(r.out).at("blas_core");
  if (__builtin_cpu_supports("avx512f")) {  // the CPU runs wider kernels: Haswell is dropped
    CHECK(core != "Haswell");
    CHECK(r.err.find("OPENBLAS_CORETYPE=Haswell was ignored") != std::string::npos);
  } else {  // nothing wider to gain: the user's choice stands
    CHECK(core == "Haswell");
  }
}

// Unset, the family is OpenBLAS's own choice, unless OpenBLAS does not know the CPU (a Xeon
// newer than the library gets its oldest kernels, Prescott): then vitgrad names the AVX-512
// family, and says so.
TEST_CASE("OPENBLAS_CORETYPE unset: an AVX-512 CPU runs AVX-512 kernels, recognised or not") {
  const auto r = vitgrad(kTiny + "--json", "env -u OPENBLAS_CORETYPE");
  REQUIRE(r.exit_code == 0);
  const std::string core = nlohmann::json::parse(r.out).at("blas_core");
  INFO("kernels ", core, ", stderr: ", r.err);
  if (__builtin_cpu_supports("avx512f")) CHECK(!vg::blas_core_narrower_than_cpu(core.c_str()));
  const bool set_here = r.err.find("which it does not recognise") != std::string::npos;
  if (set_here) CHECK(core == "SkylakeX");
  if (!__builtin_cpu_supports("avx512f")) CHECK(!set_here);
}

TEST_CASE("OMP_WAIT_POLICY: unset means passive after a short spin; what the user sets is kept") {
  const nlohmann::json unset = bench_json("", "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT");
  CHECK(unset.at("omp_wait_policy") == "passive");
  CHECK(unset.at("gomp_spincount") == "1000");
  const nlohmann::json active = bench_json("", "env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=active");
  CHECK(active.at("omp_wait_policy") == "active");
  CHECK(active.at("gomp_spincount") == "unset");
  const nlohmann::json passive = bench_json("", "env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=passive");
  CHECK(passive.at("gomp_spincount") == "unset");  // purely passive, as asked
  const nlohmann::json spin = bench_json("", "env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=50");
  CHECK(spin.at("omp_wait_policy") == "passive");
  CHECK(spin.at("gomp_spincount") == "50");
}

// The float products run on the widest tiles the CPU has; VITGRAD_GEMM chooses narrower ones.
TEST_CASE("bench names whose float products ran, and VITGRAD_GEMM chooses them") {
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const std::string widest = __builtin_cpu_supports("avx512f") ? "AVX-512"
                             : avx2                            ? "AVX2"
                                                               : "OpenBLAS";
  CHECK(bench_json("").at("float_tiles") == widest);
  const nlohmann::json on_blas = bench_json("", "VITGRAD_GEMM=blas");
  CHECK(on_blas.at("float_tiles") == "OpenBLAS");
  CHECK(on_blas.at("units_peak_gflops") == 0);  // OpenBLAS's units are not measured
  CHECK(on_blas.at("images_per_s_at_units_peak").is_null());
  if (avx2) CHECK(bench_json("", "VITGRAD_GEMM=avx2").at("float_tiles") == "AVX2");
}
