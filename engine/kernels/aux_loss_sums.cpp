#include "engine/kernels/aux_loss_sums.h"

#include <cmath>

namespace vg::kernels {

template <class T>
FeatureDecaySums feature_decay_sums(const T* x, int64_t n, double threshold) {
  FeatureDecaySums s;
  for (int64_t i = 0; i < n; ++i) {
    const double danger = std::abs(double(x[i])) - threshold;
    if (!(danger > 0)) continue;
    ++s.count;
    s.sum += danger;
    if (danger > s.top)
      s.top = danger, s.ties = 1;
    else if (danger == s.top)
      ++s.ties;
  }
  return s;
}

template <class T>
void feature_decay_grad(const T* x, int64_t n, double threshold, double top, double per_mean,
                        double per_max, T* dx) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = double(x[i]), danger = std::abs(v) - threshold;
    double grad = 0;
    if (danger > 0) grad = (v > 0 ? 1 : -1) * (per_mean + (danger == top ? per_max : 0.0));
    dx[i] = T(grad);
  }
}

template <class T>
int64_t peaks_below(const T* p, int64_t rows, int64_t T_len, double min_peak, int64_t* bad_at,
                    double* sum) {
  int64_t bad = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t arg = r * T_len;
    for (int64_t j = 1; j < T_len; ++j)
      if (p[r * T_len + j] > p[arg]) arg = r * T_len + j;
    if (double(p[arg]) < min_peak) bad_at[bad++] = arg, *sum += double(p[arg]);
  }
  return bad;
}

#define VG_AUX_LOSS_SUMS(T)                                                                \
  template FeatureDecaySums feature_decay_sums(const T*, int64_t, double);                 \
  template void feature_decay_grad(const T*, int64_t, double, double, double, double, T*); \
  template int64_t peaks_below(const T*, int64_t, int64_t, double, int64_t*, double*);
VG_AUX_LOSS_SUMS(float)
VG_AUX_LOSS_SUMS(double)
#undef VG_AUX_LOSS_SUMS

}  // namespace vg::kernels
