// What `--amp auto` picks: the precision whose products run faster on this CPU.
//
// bf16 products read half the bytes of fp32's, but they are faster only where the bf16 units
// multiply faster than the float fmas do: AMX's tiles always; AVX512-BF16's dot products on
// AMD's Zen 4 and Zen 5 (twice the fmas' rate), not on Intel's Xeons without AMX (half of it:
// there a bf16 step at dim 192 depth 12 ran at 0.7 to 0.8 of fp32's, docs/speed.md). So the
// choice weighs the two units' rates, timed once per process on one core.
#pragma once

#include <string>

#include "engine/kernels/matmul_precision.h"

namespace vg {

// The rate AVX512-BF16's dot products must reach, as a multiple of the float fmas', for auto
// to pick them: halfway, in ratio, between the CPUs there are (0.5 and 2).
constexpr double kBf16DotsFasterBy = 1.5;

// The rule: fp32 without bf16 units, bf16 on AMX, and on AVX512-BF16 alone bf16 only where its
// dot products run at least kBf16DotsFasterBy times as fast as the float fmas
// (`bf16_dot_over_float_fmas`, bf16_dot_over_float_fmas_one_core() on this CPU).
MatmulPrecision auto_matmul_precision(Bf16Hardware hardware, double bf16_dot_over_float_fmas);

// The rule on this CPU (bf16_hardware()): its AVX512-BF16 dot products' rate against the float
// fmas' (timed on the first call, under 0.1 s; 0 where not needed: without bf16 units or with
// AMX), and what the rule made of it.
struct AutoPrecision {
  double bf16_dot_over_float_fmas;
  MatmulPrecision precision;
};
const AutoPrecision& auto_precision_on_this_cpu();
// auto_precision_on_this_cpu().precision.
MatmulPrecision best_matmul_precision();

// "fp32", "bf16" or "auto" (best_matmul_precision()), what --amp takes; anything else is a
// vg::Error naming `where` and the value.
MatmulPrecision parse_matmul_precision(const std::string& name, const std::string& where);

}  // namespace vg
