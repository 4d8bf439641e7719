// The passes of the LearnableScaler recipe's two auxiliary losses (ops/aux_loss.cpp). Both
// are single serial loops in element order, in double: they are their own plain reference,
// and a sum's order never depends on the thread count.
#pragma once

#include <cstdint>

namespace vg::kernels {

// Over the elements with danger = |x| - threshold > 0: their count, the sum of danger, its
// maximum top and how many elements reach it (ties).
struct FeatureDecaySums {
  int64_t count = 0, ties = 0;
  double sum = 0, top = 0;
};

template <class T>
FeatureDecaySums feature_decay_sums(const T* x, int64_t n, double threshold);

// dx[i] = sign(x) * (per_mean + (danger == top ? per_max : 0)) where danger > 0, else 0.
template <class T>
void feature_decay_grad(const T* x, int64_t n, double threshold, double top, double per_mean,
                        double per_max, T* dx);

// For each row of p (rows, T): when its maximum is below min_peak, appends the flat index of
// the row's first maximum to bad_at and adds the maximum to *sum. Returns how many rows did;
// bad_at has room for `rows`.
template <class T>
int64_t peaks_below(const T* p, int64_t rows, int64_t T_len, double min_peak, int64_t* bad_at,
                    double* sum);

}  // namespace vg::kernels
