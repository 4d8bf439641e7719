// Reader of IDX files, the format of MNIST and Fashion-MNIST: a big-endian header (magic,
// then one 32-bit size per dimension) followed by unsigned bytes. Images are 3-dimensional
// (N, H, W: one channel) or 4-dimensional (N, H, W, C: C channels, channels-last).
//
// Files may be gzipped or plain (zlib reads both). Hostile input is rejected before any large
// allocation: the header's sizes are bounded, and the data is read in chunks, so a header
// that promises more than the file holds fails as truncated without reserving its claim.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vg::data {

inline constexpr uint32_t kIdxImagesMagic = 0x00000803;  // unsigned bytes, 3 dimensions
inline constexpr uint32_t kIdxColourImagesMagic = 0x00000804;  // unsigned bytes, 4 dimensions
inline constexpr uint32_t kIdxLabelsMagic = 0x00000801;  // unsigned bytes, 1 dimension
inline constexpr int64_t kIdxMaxItems = 10'000'000;
inline constexpr int64_t kIdxMaxSide = 1024;
inline constexpr int64_t kIdxMaxChannels = 256;

struct IdxImages {
  int64_t count = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t channels = 1;
  std::vector<uint8_t> pixels;  // count * rows * cols * channels, row-major
};

struct IdxLabels {
  int64_t count = 0;
  std::vector<uint8_t> labels;
};

// Reads an idx3-ubyte or idx4-ubyte image file. Errors are one line
// "<context>: <path>: <what is wrong>".
IdxImages read_idx_images(const std::string& path, const std::string& context = "idx");
// The header alone, checked as read_idx_images checks it (pixels left empty).
IdxImages read_idx_images_header(const std::string& path, const std::string& context = "idx");
// Reads an idx1-ubyte label file, with the same error format.
IdxLabels read_idx_labels(const std::string& path, const std::string& context = "idx");

}  // namespace vg::data
