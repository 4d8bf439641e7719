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

namespace vg {

enum class MatmulPrecision { fp32, bf16 };

// The bf16 units this CPU offers, best first: AMX tiles (amx_bf16, amx_tile, and the kernel
// lets Linux hand them out), AVX512-BF16 (vdpbf16ps), or none. The environment variable
// VITGRAD_BF16_UNITS=avx512_bf16 or =none holds the choice below what the CPU has
// (=model and =fma choose a stand-in instead, below).
enum class Bf16Hardware { amx, avx512_bf16, none };
Bf16Hardware bf16_hardware();
// "AMX-BF16", "AVX512-BF16" or "none".
const char* bf16_hardware_name(Bf16Hardware hardware);

MatmulPrecision matmul_precision();
// A vg::Error naming what is missing when `precision` is bf16 and the CPU has no bf16 units.
void check_matmul_precision_supported(MatmulPrecision precision);
// Sets the mode, after check_matmul_precision_supported.
void set_matmul_precision(MatmulPrecision precision);

// For tests, loops that stand in for the bf16 units, so that the bf16 paths through the ops and
// the command line are tested on a CPU without them: the plain model of the AMX tiles
// (Bf16Tiles::amx_model in engine/kernels/bf16_gemm.h; any CPU, slow) or float fmas on operands
// rounded to bf16 (Bf16Tiles::fma; a CPU with AVX2 and FMA, near fp32's speed on one thread).
// With one chosen, bf16 mode runs on any CPU and every bf16 product runs on it, with its own
// bits. Tests of the ops choose here; a test of the command line sets VITGRAD_BF16_UNITS=model
// or =fma, without which `--amp bf16` stays refused on such a CPU. `--amp auto` never picks one.
enum class Bf16StandIn { none, model, fma };
void use_bf16_stand_in(Bf16StandIn stand_in);
Bf16StandIn bf16_stand_in();
// What bf16 products run on: "AMX-BF16", "AVX512-BF16", "none", or the stand-in's name,
// "model" or "fma".
const char* bf16_units_in_use();

// What --amp auto picks, and the parsing of --amp: engine/kernels/precision_choice.h.
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
