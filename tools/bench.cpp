// `vitgrad bench`: times training steps (forward, cross-entropy, backward, AdamW) of a model
// on random images, after warm-up, and reports the median step, images/s, the matmul rate,
// peak memory, the OpenBLAS kernels and how the processors' time was shared (a busy host
// takes some: steal); --profile adds where the time goes per op, --products each linear
// layer's products against OpenBLAS's (tools/bench_products.h).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "engine/autograd/autograd.h"
#include "engine/autograd/profile.h"
#include "engine/core/parallel.h"
#include "engine/core/storage.h"
#include "engine/kernels/bf16_gemm.h"
#include "engine/kernels/blas.h"
#include "engine/kernels/matmul_precision.h"
#include "engine/kernels/precision_choice.h"
#include "engine/kernels/units_peak.h"
#include "engine/ops/ops.h"
#include "engine/optim/adamw.h"
#include "engine/optim/param_groups.h"
#include "models/vit.h"
#include "tools/args.h"
#include "tools/bench_products.h"
#include "tools/cpu_shares.h"
#include "tools/model_flags.h"
#include "tools/train_flags.h"

namespace vg::tools {
namespace {

using Clock = std::chrono::steady_clock;

const char* env_or_unset(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "unset";
}

// A share of the processors' time for --json, null where /proc/stat could not tell.
nlohmann::json share_or_null(const CpuShares& shares, double CpuShares::*kind) {
  return shares.known ? nlohmann::json(shares.*kind) : nlohmann::json(nullptr);
}

void print_shares(const CpuShares& cpu) {
  std::cout << std::fixed << std::setprecision(0)
            << "processors during the timed steps: " << cpu.busy << "% busy, " << cpu.idle
            << "% idle, " << cpu.steal << "% taken by the host (steal)\n";
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) / 1024.0;  // kilobytes on Linux
}

// The best rate of five 1024^3 products on the engine's threads: the ceiling the model's
// products are measured against. fp32: OpenBLAS's sgemm, a library's rate rather than the
// engine's own loops; bf16 (in bf16 mode): the engine's bf16 products.
double gemm_peak_gflops(bool bf16) {
  const int64_t n = 1024;
  Rng rng(1);
  const Tensor a = randn({n, n}, rng), b = randn({n, n}, rng);
  Tensor c = Tensor::empty({n, n});
  const float *x = a.data<float>(), *y = b.data<float>();
  float* z = c.data<float>();
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = Clock::now();
    if (bf16)
      gemm(false, false, n, n, n, 1.0f, x, n, y, n, 0.0f, z, n);
    else
      gemm_on_openblas(false, false, n, n, n, x, n, y, n, z, n);
    best = std::min(best, seconds_since(t0));
  }
  return 2.0 * double(n) * n * n / best / 1e9;
}

// The units' peak the step's products run on: AVX512-BF16's dot products in bf16 mode, the
// float tiles' fmas in fp32; 0 where it is not measured (AMX's tiles, a stand-in for tests).
double units_peak_gflops(bool bf16) {
  if (!bf16) return float_units_peak_gflops();
  const bool dot_products =
      bf16_hardware() == Bf16Hardware::avx512_bf16 && bf16_stand_in() == Bf16StandIn::none;
  return dot_products ? bf16_dot_peak_gflops() : 0;
}

// The units' peak, and what it allows a step: its products at that rate and nothing else.
void print_units_peak(double units, double matmul_flops, int64_t batch, bool bf16) {
  if (units <= 0) {
    std::cout << "units' peak: not measured for " << (bf16 ? bf16_units_in_use() : "OpenBLAS")
              << "\n";
    return;
  }
  const double floor_s = matmul_flops / (units * 1e9);
  std::cout << std::fixed << std::setprecision(1) << "units' peak: " << units << " GFLOP/s ("
            << (bf16 ? "AVX512-BF16 dot products" : std::string(float_tiles_name()) + " fmas")
            << " on registers alone): the step's products take at least " << 1e3 * floor_s
            << " ms there, " << double(batch) / floor_s << " images/s at most\n";
}

// Where bf16 runs on AVX512-BF16 dot products slower than the float fmas (Intel's Xeons without
// AMX), a line that says so: --amp auto picks fp32 there.
void print_slow_bf16_units_note() {
  if (bf16_stand_in() != Bf16StandIn::none) return;
  const AutoPrecision& found = auto_precision_on_this_cpu();
  if (bf16_hardware() != Bf16Hardware::avx512_bf16 || found.precision != MatmulPrecision::fp32)
    return;
  std::cerr << std::fixed << std::setprecision(2)
            << "note: this CPU's AVX512-BF16 dot products run at " << found.bf16_dot_over_float_fmas
            << "x the rate of its float fmas (one core), so bf16 products are no faster than "
               "fp32's here; --amp auto picks fp32\n";
}

void print_profile(const std::map<std::string, double>& seconds, int64_t steps) {
  std::vector<std::pair<double, std::string>> rows;
  double total = 0;
  for (const auto& [name, s] : seconds) {
    rows.push_back({s, name});
    total += s;
  }
  std::sort(rows.rbegin(), rows.rend());
  std::cout << "\nper op, ms per step (forward: since the previous op; backward: the closure and "
               "the gradient accumulation):\n";
  for (const auto& [s, name] : rows) {
    std::cout << "  " << std::left << std::setw(36) << name << std::right << std::fixed
              << std::setprecision(2) << std::setw(9) << 1e3 * s / double(steps) << " ms "
              << std::setprecision(1) << std::setw(5) << 100 * s / total << "%\n";
  }
}

// The flags of `vitgrad bench`: the model's, then its own.
std::vector<Flag> bench_flags() {
  std::vector<Flag> flags = model_flags();
  const std::vector<Flag> own = {
      {"--batch", "N", "images per step (default 128)"},
      {"--steps", "N", "timed steps (default 10)"},
      {"--warmup", "N", "untimed steps first (default 2)"},
      {"--threads", "N", "threads for kernels and products (default: all cores)"},
      {"--amp", "MODE",
       "fp32 (default) | bf16: matrix products on bf16 operands, float sums | auto: bf16 where "
       "the CPU's bf16 units outrun its fmas, else fp32"},
      {"--profile", "", "also print the time per op (forward and backward) and optimiser"},
      {"--products", "",
       "also time each linear layer's three products (forward, input and weight gradient) at "
       "the step's shapes, on vitgrad's products and on OpenBLAS's sgemm"},
      {"--json", "", "print one JSON line instead of the report"}};
  flags.insert(flags.end(), own.begin(), own.end());
  return flags;
}

// What the timed steps measured: each step's seconds (ascending), how the processors' time
// was shared, heap allocations and page faults per step, and with --profile the time per op.
struct TimedSteps {
  std::vector<double> sorted_seconds;
  CpuShares cpu;
  double allocs = 0, faults = 0;
  std::map<std::string, double> profile;

  double median() const {
    const size_t n = sorted_seconds.size();
    return n % 2 ? sorted_seconds[n / 2] : (sorted_seconds[n / 2 - 1] + sorted_seconds[n / 2]) / 2;
  }
};

// `warmup` training steps (forward, cross-entropy, backward, AdamW), then `steps` timed ones.
TimedSteps time_steps(ViT& model, const Tensor& images, const std::vector<int32_t>& labels,
                      int64_t warmup, int64_t steps, bool profile) {
  optim::AdamW opt(optim::param_groups_weight_decay(model.named_parameters(), 0.05));
  opt.set_lr(1e-3);
  std::optional<OpProfiler> profiler;
  auto step = [&] {
    if (profiler) profiler->mark();
    Tensor loss = cross_entropy(model.forward(images), labels);
    loss.item();
    loss.backward();
    ProfileSection section("optimiser (AdamW step, zero_grad)");
    opt.step();
    opt.zero_grad();
  };
  for (int64_t i = 0; i < warmup; ++i) step();
  const MemoryStats before = memory_stats();
  const int64_t faults_before = page_faults_so_far();
  if (profile) profiler.emplace();
  const std::optional<CpuTicks> ticks_before = read_cpu_ticks();
  TimedSteps timed;
  for (int64_t i = 0; i < steps; ++i) {
    const auto t0 = Clock::now();
    step();
    timed.sorted_seconds.push_back(seconds_since(t0));
  }
  timed.cpu = shares_between(ticks_before, read_cpu_ticks());
  timed.allocs = double(memory_stats().heap_allocations - before.heap_allocations) / double(steps);
  timed.faults = double(page_faults_so_far() - faults_before) / double(steps);
  if (profiler) timed.profile = profiler->seconds();
  std::sort(timed.sorted_seconds.begin(), timed.sorted_seconds.end());
  return timed;
}

// A bench run's figures, and the rates they are set against, measured after the steps.
struct BenchReport {
  int64_t batch = 0;
  bool bf16 = false;
  TimedSteps timed;
  double median = 0, ips = 0, gflops = 0, matmul_flops = 0;
  double sgemm = 0, peak = 0, units = 0, rss = 0;
  std::string core;
};

BenchReport report_on(const TimedSteps& timed, int64_t batch, double matmul_flops, bool bf16) {
  BenchReport r;
  r.batch = batch;
  r.bf16 = bf16;
  r.timed = timed;
  r.matmul_flops = matmul_flops;
  r.median = timed.median();
  r.ips = double(batch) / r.median;
  r.gflops = matmul_flops / r.median / 1e9;
  r.sgemm = gemm_peak_gflops(false);
  r.peak = bf16 ? gemm_peak_gflops(true) : r.sgemm;
  r.units = units_peak_gflops(bf16);
  r.rss = peak_rss_mb();
  r.core = blas_core_name();
  return r;
}

// The report as one JSON line, with the products' timings where --products asked for them.
void print_json(const BenchReport& r, const nlohmann::json& products) {
  const CpuShares& cpu = r.timed.cpu;
  const nlohmann::json at_units_peak =
      r.units > 0 ? nlohmann::json(double(r.batch) * r.units * 1e9 / r.matmul_flops) : nullptr;
  const nlohmann::json report{{"images_per_s", r.ips},
                              {"ms_per_step", 1e3 * r.median},
                              {"gflops", r.gflops},
                              {"sgemm_gflops", r.sgemm},
                              {"amp", matmul_precision_name(matmul_precision())},
                              {"bf16_gemm_gflops", r.bf16 ? r.peak : 0.0},
                              {"bf16_units", bf16_units_in_use()},
                              {"units_peak_gflops", r.units},
                              {"images_per_s_at_units_peak", at_units_peak},
                              {"peak_rss_mb", r.rss},
                              {"heap_allocations_per_step", r.timed.allocs},
                              {"page_faults_per_step", r.timed.faults},
                              {"threads", num_threads()},
                              {"batch", r.batch},
                              {"blas_core", r.core},
                              {"float_tiles", float_tiles_name()},
                              {"omp_wait_policy", env_or_unset("OMP_WAIT_POLICY")},
                              {"gomp_spincount", env_or_unset("GOMP_SPINCOUNT")},
                              {"cpu_busy_percent", share_or_null(cpu, &CpuShares::busy)},
                              {"cpu_idle_percent", share_or_null(cpu, &CpuShares::idle)},
                              {"cpu_steal_percent", share_or_null(cpu, &CpuShares::steal)}};
  nlohmann::json line = report;
  if (!products.is_null()) line["products"] = products;
  std::cout << line.dump() << "\n";
}

// Which bf16 units ran the products, and the sgemm rate beside the bf16 GEMM's.
void print_bf16_units(double sgemm) {
  std::cout << "bf16 products on " << bf16_units_in_use()
            << (bf16_stand_in() != Bf16StandIn::none
                    ? " (VITGRAD_BF16_UNITS: a stand-in for tests, not the units' speed)"
                : bf16_hardware() == Bf16Hardware::amx
                    ? " (those under " + std::to_string(kAmxMinMacs) +
                          " multiply-adds on float fmas)"
                    : std::string())
            << "; a 1024^3 OpenBLAS sgemm: " << sgemm << " GFLOP/s\n";
}

void print_report(const BenchReport& r, int64_t steps) {
  const std::vector<double>& sorted = r.timed.sorted_seconds;
  std::cout << std::fixed << std::setprecision(2) << "ms/step (median of " << steps
            << "): " << 1e3 * r.median << "  [" << 1e3 * sorted.front() << " .. "
            << 1e3 * sorted.back() << "]\n"
            << "images/s: " << std::setprecision(1) << r.ips << "\n"
            << "matmul GFLOP/s: " << r.gflops << " (" << std::setprecision(0)
            << 100 * r.gflops / r.peak << "% of a 1024^3 "
            << (r.bf16 ? "bf16 GEMM" : "OpenBLAS sgemm") << ": " << std::setprecision(1) << r.peak
            << ")\n";
  if (r.bf16) print_bf16_units(r.sgemm);
  print_units_peak(r.units, r.matmul_flops, r.batch, r.bf16);
  std::cout << "peak RSS: " << r.rss << " MB\n"
            << "heap allocations per step: " << r.timed.allocs
            << "  page faults per step: " << r.timed.faults << "\n"
            << "threads: " << num_threads() << "  float products: " << float_tiles_name()
            << "  OpenBLAS kernels: " << r.core
            << "  OMP_WAIT_POLICY: " << env_or_unset("OMP_WAIT_POLICY")
            << "  GOMP_SPINCOUNT: " << env_or_unset("GOMP_SPINCOUNT") << "\n";
  if (r.timed.cpu.known) print_shares(r.timed.cpu);
}

// The matrix products' FLOPs of one training step: the backward does twice the forward's.
double step_matmul_flops(ViT& model, const Tensor& images) {
  NoGradGuard no_grad;
  FlopCounter flops;
  model.forward(images);
  return 3 * flops.matmul();
}

}  // namespace

int run_bench(const std::vector<std::string>& argv) {
  ArgParser args("bench", "vitgrad bench [--preset NAME | --config FILE] [model flags] [options]",
                 bench_flags());
  args.parse(argv);
  if (args.help_requested()) {
    std::cout << args.help();
    return 0;
  }
  if (args.on("--json") && args.on("--profile")) args.fail("give --json or --profile, not both");
  const ViTConfig config = model_from_flags(args);
  const int64_t batch = args.integer("--batch", 128, 1, 65536);
  const int64_t steps = args.integer("--steps", 10, 1, 1000000);
  const int64_t warmup = args.integer("--warmup", 2, 0, 1000000);
  threads_from_flags(args);
  const MatmulPrecisionGuard amp(
      parse_matmul_precision(args.choice("--amp", "fp32", {"fp32", "bf16", "auto"}), "--amp"));
  const bool bf16 = matmul_precision() == MatmulPrecision::bf16;

  ViT model(config, 0);
  model.train();
  Rng rng(7);
  const Tensor images = randn({batch, config.img_size, config.img_size, config.in_chans}, rng);
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (auto& l : labels) l = int32_t(rng.below(uint64_t(config.num_classes)));
  const double matmul_flops = step_matmul_flops(model, images);
  const TimedSteps timed = time_steps(model, images, labels, warmup, steps, args.on("--profile"));
  const BenchReport report = report_on(timed, batch, matmul_flops, bf16);
  constexpr int kProductRepeats = 10;
  const std::vector<ProductTiming> products =
      args.on("--products") ? time_products(block_products(model, batch), kProductRepeats)
                            : std::vector<ProductTiming>{};
  if (args.on("--json"))
    print_json(report, args.on("--products") ? products_json(products) : nlohmann::json());
  else
    print_report(report, steps);
  if (const std::string note = blas_core_note(); !note.empty()) std::cerr << note << "\n";
  if (bf16) print_slow_bf16_units_note();
  if (args.on("--profile")) print_profile(timed.profile, steps);
  if (args.on("--products") && !args.on("--json")) print_products(products, bf16, kProductRepeats);
  return 0;
}

}  // namespace vg::tools
