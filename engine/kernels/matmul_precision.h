// The precision of the engine's float matrix products: the one switch behind `--amp bf16`.
//
// Like a PyTorch CPU autocast region, the mode changes what the products read, nothing else:
// in bf16 mode every float product of engine/kernels/blas.h (linear layers forward and both
// gradients, the attention heads' products, the patch embedding) rounds its two operands to
// bfloat16 and sums the products in float (engine/kernels/bf16_gemm.h). Its inputs and
// outputs stay float tensors, so weights, optimiser state, norms, softmax, losses and the
// gradients the optimiser sees are float as before (master weights); double products
// (gradient checks) never change. fp32 is the default.
//
// The mode is process-wide (the engine's worker threads run products too), one of the
// engine's documented global settings next to the thread count. Set it with
// set_matmul_precision or, for a scope, MatmulPrecisionGuard.
#pragma once

#include <string>

namespace vg {

enum class MatmulPrecision { fp32, bf16 };

// The bf16 units this CPU offers, best first: AMX tiles (amx_bf16, amx_tile, and the kernel
// lets Linux hand them out), AVX512-BF16 (vdpbf16ps), or none. The environment variable
// VITGRAD_BF16_UNITS=avx512_bf16 or =none holds the choice below what the CPU has.
enum class Bf16Hardware { amx, avx512_bf16, none };
Bf16Hardware bf16_hardware();
// "AMX-BF16", "AVX512-BF16" or "none".
const char* bf16_hardware_name(Bf16Hardware hardware);

MatmulPrecision matmul_precision();
// A vg::Error naming what is missing when `precision` is bf16 and the CPU has no bf16 units.
void check_matmul_precision_supported(MatmulPrecision precision);
// Sets the mode, after check_matmul_precision_supported.
void set_matmul_precision(MatmulPrecision precision);

// For tests: with `on`, bf16 mode runs on any CPU, every bf16 product on the plain model of the
// AMX tiles (engine/kernels/bf16_gemm.h, Bf16Tiles::amx_model), so that the tests of the bf16
// paths through the ops run where there are no bf16 units. Slow, and only for tests: --amp bf16
// stays refused on such a CPU. Off (the CPU's own loops) again with false.
void use_bf16_model_for_tests(bool on);
bool bf16_model_for_tests();

// bf16 where the CPU has bf16 units (bf16_hardware() != none), fp32 elsewhere: what --amp auto
// picks.
MatmulPrecision best_matmul_precision();

// "fp32", "bf16" or "auto" (best_matmul_precision()), what --amp takes; anything else is a
// vg::Error naming `where` and the value.
MatmulPrecision parse_matmul_precision(const std::string& name, const std::string& where);
const char* matmul_precision_name(MatmulPrecision precision);

// Sets a mode for the scope and restores the one before.
class MatmulPrecisionGuard {
 public:
  explicit MatmulPrecisionGuard(MatmulPrecision precision) : before_(matmul_precision()) {
    set_matmul_precision(precision);
  }
  ~MatmulPrecisionGuard() { set_matmul_precision(before_); }
  MatmulPrecisionGuard(const MatmulPrecisionGuard&) = delete;
  MatmulPrecisionGuard& operator=(const MatmulPrecisionGuard&) = delete;

 private:
  MatmulPrecision before_;
};

}  // namespace vg
