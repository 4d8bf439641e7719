// im2col and col2im: a convolution of channels-last images (N, H, W, C) written as one matrix
// product. Every output position (n, oy, ox) becomes a row of the column matrix holding the
// k x k x C input values its kernel covers, flattened in (c, i, j) order, as PyTorch's
// Conv2d weight [C_out, C, k, k] is laid out; positions outside the image (the zero
// padding) read 0. The columns are (N * Ho * Wo, C * k * k), Ho = (H + 2p - k) / s + 1.
//
// Threads: im2col splits the rows; col2im splits the images, so every input element is
// summed by one thread in one fixed order and the bits do not depend on the thread count.
#pragma once

#include <cstdint>

namespace vg::kernels {

struct ConvGeometry {
  int64_t batch, height, width, channels, kernel, stride, padding;
  int64_t out_height() const { return (height + 2 * padding - kernel) / stride + 1; }
  int64_t out_width() const { return (width + 2 * padding - kernel) / stride + 1; }
  int64_t rows() const { return batch * out_height() * out_width(); }
  int64_t row_len() const { return channels * kernel * kernel; }
};

// columns (rows, row_len) = the patches every output position reads (conv2d's forward).
template <class T>
void im2col(const ConvGeometry& g, const T* image, T* columns);

// image (N, H, W, C) = the sum over every column entry of the input element it was read
// from; padding entries are dropped (conv2d's input gradient). Overwrites `image`.
template <class T>
void col2im(const ConvGeometry& g, const T* columns, T* image);

// The same two as plain nested loops over (n, oy, ox, c, i, j): the same results, bit for bit
// (col2im adds each element's terms in the same order).
template <class T>
void im2col_reference(const ConvGeometry& g, const T* image, T* columns);
template <class T>
void col2im_reference(const ConvGeometry& g, const T* columns, T* image);

}  // namespace vg::kernels
