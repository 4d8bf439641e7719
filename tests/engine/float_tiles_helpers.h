// Runs a test body once for each kind of float tiles this CPU has (engine/kernels/gemm_simd.h),
// and once on OpenBLAS alone, restoring the choice afterwards.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "engine/kernels/gemm_simd.h"

namespace vg::testing {

template <class F>
void for_each_float_tiles(F&& body) {
  using detail::FloatTiles;
  const FloatTiles before = detail::float_tiles();
  for (const FloatTiles tiles : {FloatTiles::none, FloatTiles::avx2, FloatTiles::avx512}) {
    if (tiles == FloatTiles::avx2 &&
        !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")))
      continue;
    if (tiles == FloatTiles::avx512 && !__builtin_cpu_supports("avx512f")) continue;
    CAPTURE(std::string(detail::float_tiles_name(tiles)));
    detail::use_float_tiles(tiles);
    body(tiles);
  }
  detail::use_float_tiles(before);
}

}  // namespace vg::testing
