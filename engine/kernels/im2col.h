// im2col and col2im: a convolution of channels-last images (N, H, W, C) written as one matrix
// product. Every output position (n, oy, ox) becomes a row of the column matrix holding the
// k x k x C input values its kernel covers, flattened in (i, j, c) order: tap by tap, each
// tap the C channels of one pixel, which lie side by side in a channels-last image, so a
// kernel row inside the image (k taps) is one contiguous copy (PyTorch's weight
// [C_out, C, k, k] is permuted to [C_out, k, k, C] to match, ops/conv.cpp). Positions
// outside the image (the zero padding) read 0. The columns are (N * Ho * Wo, k * k * C), Ho = (H + 2p - k) / s + 1.
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
// Rows [r0, r1) and columns [c0, c1) of those columns into out (c1 - c0 apart), on the
// calling thread: the columns made a block at a time, where a product packs them
// (engine/kernels/made_rows.h).
template <class T>
void im2col_rows(const ConvGeometry& g, const T* image, int64_t r0, int64_t r1, int64_t c0,
                 int64_t c1, T* out);

// image (N, H, W, C) = the sum over every column entry of the input element it was read
// from; padding entries are dropped (conv2d's input gradient). Overwrites `image`.
template <class T>
void col2im(const ConvGeometry& g, const T* columns, T* image);

// image (N, H, W, C) = col2im(dY W): conv2d's input gradient from dY (rows, c_out), one row
// per output position, and the weight W (c_out, row_len), the product on engine/kernels/blas.h.
// One image at a time: its rows of the product are summed back while they are in cache,
// instead of every image's columns making a round trip through memory. The same bits as
// the product of all rows followed by col2im.
template <class T>
void conv_input_gradient(const ConvGeometry& g, int64_t c_out, const T* grad, const T* weight,
                         T* image);

// The same two as plain nested loops over (n, oy, ox, i, j, c): the same results, bit for bit
// (col2im adds each element's terms in the same order).
template <class T>
void im2col_reference(const ConvGeometry& g, const T* image, T* columns);
template <class T>
void col2im_reference(const ConvGeometry& g, const T* columns, T* image);

}  // namespace vg::kernels
