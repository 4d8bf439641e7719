// fp32 training on a CPU with the engine's float tiles (AVX2 and FMA, or AVX-512) gives the same
// bits whichever kernel family OpenBLAS runs: every float product is the tiles' own
// (engine/kernels/blas.cpp), and OpenBLAS's families sum in orders of their own.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_helpers.h"

using vg::testing::read_text;
using vg::testing::scratch_dir;
using vg::testing::vitgrad;
namespace fs = std::filesystem;

TEST_CASE("fp32 training gives the same bits whichever kernel family OpenBLAS runs") {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    MESSAGE("skipped: without AVX2 and FMA, OpenBLAS computes the float products");
    return;
  }
  // A convolution stem (its first weight gradient, 9 columns wide, and the classifier head,
  // 10 wide, are products too narrow for the tiles' fast layouts) and two threads. Prescott's
  // kernels (SSE3, no fmas) and Haswell's sum otherwise; VITGRAD_KEEP_CORETYPE keeps either
  // on a CPU with AVX-512 too.
  const std::string train =
      "train --data synthetic --synthetic-size 40 --stem conv:8,16 --patch 1 --depth 1 --dim 16 "
      "--heads 2 "
      "--batch 20 --steps 3 --log-every 1 --amp fp32 --seed 5 --threads 2 --out ";
  const fs::path dir = scratch_dir("blas_family");
  for (const std::string family : {"Prescott", "Haswell"}) {
    const auto r = vitgrad(train + (dir / family).string(),
                           "VITGRAD_KEEP_CORETYPE=1 OPENBLAS_CORETYPE=" + family);
    INFO(family, ": ", r.err);
    REQUIRE(r.exit_code == 0);
  }
  const auto prescott = nlohmann::json::parse(read_text(dir / "Prescott" / "last.json"));
  const auto haswell = nlohmann::json::parse(read_text(dir / "Haswell" / "last.json"));
  for (const char* part : {"model", "optimizer"}) {
    INFO(part);
    const bool same = prescott.at(part) == haswell.at(part);
    CHECK(same);
  }
  fs::remove_all(dir);
}
