// The environment variables the kernels read once, when they first run: VITGRAD_GEMM (whose
// float tiles, engine/kernels/gemm_simd.h) and VITGRAD_BF16_UNITS (which bf16 units or
// stand-in, engine/kernels/matmul_precision.h); docs/cli.md lists their values. Each reader
// takes the values it knows and ignores any other, so a typo would run, and measure, other
// kernels than the user meant without a word; the command line checks them first.
#pragma once

namespace vg {

// A vg::Error naming the variable and its values when one of them is set to a value that is
// none of its own (set but empty counts as unset).
void check_kernel_settings();

}  // namespace vg
