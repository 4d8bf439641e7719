// Which vector units this build targets with fmas (-march=native on such a CPU). The
// hand-written rows (attention_rows.h, layer_norm_rows_avx512.h, layer_norm_rows_avx2.h) do the
// generic loops' arithmetic with the fmas GCC contracts those loops to, and only such a build
// contracts them so; only there are the rows built. A portable build runs the generic loops,
// whatever the CPU, so that its bits do not depend on where it runs. Also the one answer to a
// warning GCC prints for AVX-512 intrinsics (below), for the kernel files that use them.
#pragma once

// GCC 12 inlines plain (unmasked) AVX-512 intrinsics as masked ones with an undefined
// pass-through vector, and then warns that it is, or may be, used uninitialised; it is never
// read. Code that uses such intrinsics sits between these two. clang neither does this nor
// knows the warnings.
#if defined(__GNUC__) && !defined(__clang__)
#define VG_AVX512_INTRINSICS_BEGIN                                                           \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"") \
      _Pragma("GCC diagnostic ignored \"-Wuninitialized\"")
#define VG_AVX512_INTRINSICS_END _Pragma("GCC diagnostic pop")
#else
#define VG_AVX512_INTRINSICS_BEGIN
#define VG_AVX512_INTRINSICS_END
#endif

namespace vg::detail {

#if defined(__AVX512F__) && defined(__FMA__)
inline constexpr bool kBuildHasAvx512Fma = true;
#else
inline constexpr bool kBuildHasAvx512Fma = false;
#endif

#if defined(__AVX2__) && defined(__FMA__)
inline constexpr bool kBuildHasAvx2Fma = true;
#else
inline constexpr bool kBuildHasAvx2Fma = false;
#endif

}  // namespace vg::detail
