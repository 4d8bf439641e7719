// The most multiply-adds a second the CPU's units can do: independent chains of fmas (or of
// bf16 dot products) on registers alone, no memory and no packing, on the engine's threads.
// No product runs faster, so a step's products set against it give the floor of its time:
// `vitgrad bench` reports it beside the step, and a gap to a goal that is below that floor is
// one no kernel can close.
#pragma once

namespace vg {

// GFLOP/s of the fmas the float products run on (AVX-512 or AVX2, detail::float_tiles()); 0
// where they run on neither.
double float_units_peak_gflops();

// GFLOP/s of AVX512-BF16's dot products (vdpbf16ps, 2 multiply-adds a lane); 0 where there
// are no bf16 units (bf16_hardware()). On an AMX machine this is still AVX512-BF16's rate:
// AMX's tiles, which run most of the products there, are not measured.
double bf16_dot_peak_gflops();

// How many times the float fmas' rate AVX512-BF16's dot products reach on the calling thread:
// up to a fiftieth of a second of each, in turn, the best of three kept, each rate over the
// processor time the thread had (not over wall time, which other threads stretch). About 2 on AMD's
// Zen 4 and Zen 5, about 0.5 on Intel's Xeons of family 6 model 207. 0 where there are no bf16
// units or no float fmas. What --amp auto weighs (engine/kernels/precision_choice.h).
double bf16_dot_over_float_fmas_one_core();

}  // namespace vg
