#include "engine/kernels/precision_choice.h"

#include "engine/core/error.h"
#include "engine/kernels/units_peak.h"

namespace vg {

MatmulPrecision auto_matmul_precision(Bf16Hardware hardware, double bf16_dot_over_float_fmas) {
  switch (hardware) {
    case Bf16Hardware::amx:
      return MatmulPrecision::bf16;
    case Bf16Hardware::avx512_bf16:
      return bf16_dot_over_float_fmas >= kBf16DotsFasterBy ? MatmulPrecision::bf16
                                                           : MatmulPrecision::fp32;
    case Bf16Hardware::none:
      break;
  }
  return MatmulPrecision::fp32;
}

const AutoPrecision& auto_precision_on_this_cpu() {
  static const AutoPrecision found = [] {
    const Bf16Hardware hardware = bf16_hardware();
    // Only AVX512-BF16 alone needs the units timed.
    const double ratio =
        hardware == Bf16Hardware::avx512_bf16 ? bf16_dot_over_float_fmas_one_core() : 0;
    return AutoPrecision{ratio, auto_matmul_precision(hardware, ratio)};
  }();
  return found;
}

MatmulPrecision best_matmul_precision() {
  return auto_precision_on_this_cpu().precision;
}

MatmulPrecision parse_matmul_precision(const std::string& name, const std::string& where) {
  if (name == "fp32") return MatmulPrecision::fp32;
  if (name == "bf16") return MatmulPrecision::bf16;
  if (name == "auto") return best_matmul_precision();
  throw Error(cat_str(where, ": '", name, "' is not a precision; expected fp32, bf16 or auto"));
}

}  // namespace vg
