#include "engine/kernels/axis_max.h"

#include <cmath>

#include "engine/core/parallel.h"

namespace vg::kernels {

template <class T>
void max_middle_axis(const T* src, T* dst, int64_t* where, int64_t outer, int64_t reduced,
                     int64_t inner) {
  parallel_for(outer * inner, 256, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t o = k / inner, i = k % inner;
      int64_t best = o * reduced * inner + i;
      for (int64_t r = 1; r < reduced; ++r) {
        const int64_t at = (o * reduced + r) * inner + i;
        if (src[at] > src[best] || (std::isnan(src[at]) && !std::isnan(src[best]))) best = at;
      }
      dst[k] = src[best];
      where[k] = best;
    }
  });
}

template <class T>
void max_middle_axis_reference(const T* src, T* dst, int64_t* where, int64_t outer,
                               int64_t reduced, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = o * reduced * inner + i;
      for (int64_t r = 1; r < reduced; ++r) {
        const int64_t at = (o * reduced + r) * inner + i;
        const bool nan_wins = std::isnan(src[at]) && !std::isnan(src[best]);
        if (src[at] > src[best] || nan_wins) best = at;
      }
      dst[o * inner + i] = src[best];
      where[o * inner + i] = best;
    }
}

template void max_middle_axis(const float*, float*, int64_t*, int64_t, int64_t, int64_t);
template void max_middle_axis(const double*, double*, int64_t*, int64_t, int64_t, int64_t);
template void max_middle_axis_reference(const float*, float*, int64_t*, int64_t, int64_t,
                                        int64_t);
template void max_middle_axis_reference(const double*, double*, int64_t*, int64_t, int64_t,
                                        int64_t);

}  // namespace vg::kernels
