// The kinds of bf16 loops a test can run on this CPU (engine/kernels/bf16_gemm.h).
#pragma once

#include <vector>

#include "engine/kernels/bf16_gemm.h"
#include "engine/kernels/matmul_precision.h"

namespace vg::testing {

// Float fmas on operands rounded to bf16 (Bf16Tiles::fma) need the fp32 tiles' AVX2 and FMA.
inline bool cpu_runs_bf16_fmas() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

// The plain model of the AMX tiles on any CPU; float fmas where cpu_runs_bf16_fmas() (unless
// `with_fma` is false); AVX512-BF16 and the AMX tiles where the CPU has them. So a CPU without
// bf16 units, where --amp bf16 is refused, still runs the packers, the chunks of k and the
// model's tiles.
inline std::vector<Bf16Tiles> bf16_tiles_here(bool with_fma = true) {
  std::vector<Bf16Tiles> kinds{Bf16Tiles::amx_model};
  if (with_fma && cpu_runs_bf16_fmas()) kinds.push_back(Bf16Tiles::fma);
  if (bf16_hardware() != Bf16Hardware::none) kinds.push_back(Bf16Tiles::avx512_bf16);
  if (bf16_hardware() == Bf16Hardware::amx) kinds.push_back(Bf16Tiles::amx);
  return kinds;
}

// For its scope, bf16 mode on the plain model of the AMX tiles where the CPU has no bf16 units
// (use_bf16_stand_in), so that a test of the ops in bf16 mode runs on any CPU; where it has
// them, nothing changes. Set it before a MatmulPrecisionGuard, which checks that bf16 can run.
class Bf16ModelWhereNeeded {
 public:
  Bf16ModelWhereNeeded() : on_(bf16_hardware() == Bf16Hardware::none) {
    if (on_) use_bf16_stand_in(Bf16StandIn::model);
  }
  ~Bf16ModelWhereNeeded() {
    if (on_) use_bf16_stand_in(Bf16StandIn::none);
  }
  Bf16ModelWhereNeeded(const Bf16ModelWhereNeeded&) = delete;
  Bf16ModelWhereNeeded& operator=(const Bf16ModelWhereNeeded&) = delete;

 private:
  bool on_;
};

}  // namespace vg::testing
