// Reader of IDX files, the format of MNIST and Fashion-MNIST: a big-endian header (magic,
// then one 32-bit size per dimension) followed by unsigned bytes.
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
inline constexpr uint32_t kIdxLabelsMagic = 0x00000801;  // unsigned bytes, 1 dimension
inline constexpr int64_t kIdxMaxItems = 10'000'000;
inline constexpr int64_t kIdxMaxSide = 1024;

struct IdxImages {
  int64_t count = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> pixels;  // count * rows * cols, row-major
};

struct IdxLabels {
  int64_t count = 0;
  std::vector<uint8_t> labels;
};

// Reads an idx3-ubyte image file. Errors are one line "<context>: <path>: <what is wrong>".
IdxImages read_idx_images(const std::string& path, const std::string& context = "idx");
// Reads an idx1-ubyte label file, with the same error format.
IdxLabels read_idx_labels(const std::string& path, const std::string& context = "idx");

}  // namespace vg::data
