// Writing IDX files (plain or gzipped) into a temporary folder, for the tests of the IDX
// reader, the IDX data sets and the command line's --data-dir.
#pragma once

#include <doctest/doctest.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/data/idx.h"
#include "tests/scratch_dir.h"

namespace vg::testing {

namespace fs = std::filesystem;

// A fresh scratch folder (tests/scratch_dir.h), removed with everything in it at the end of
// its scope.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) : path(scratch_dir("data_test_" + name)) {}
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& file) const { return (path / file).string(); }
};

inline std::vector<uint8_t> idx_bytes(uint32_t magic, const std::vector<uint32_t>& sizes,
                                      const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  auto word = [&](uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
  };
  word(magic);
  for (uint32_t s : sizes) word(s);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// Writes bytes as they are, or gzipped when the path ends in .gz.
inline void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
    gzFile f = gzopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
            static_cast<int>(bytes.size()));
    REQUIRE(gzclose(f) == Z_OK);
  } else {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::vector<uint8_t> pattern(size_t n, int mul = 7) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * mul % 256);
  return v;
}

inline void write_images(const std::string& path, uint32_t count, uint32_t rows, uint32_t cols,
                         int mul = 7) {
  write_file(path, idx_bytes(data::kIdxImagesMagic, {count, rows, cols},
                             pattern(size_t{count} * rows * cols, mul)));
}

inline void write_labels(const std::string& path, const std::vector<uint8_t>& labels) {
  write_file(path,
             idx_bytes(data::kIdxLabelsMagic, {static_cast<uint32_t>(labels.size())}, labels));
}

}  // namespace vg::testing
