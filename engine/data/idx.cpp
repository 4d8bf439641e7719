#include "engine/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "engine/core/error.h"

namespace vg::data {
namespace {

// More pixel bytes than this is not an image data set this reader is meant for.
constexpr int64_t kMaxDataBytes = int64_t{1} << 32;
// Data is read (and the buffer grown) this much at a time, so memory follows what the
// file really holds, not what its header claims.
constexpr int64_t kReadChunk = int64_t{1} << 24;

std::string hex32(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}

// A file opened through zlib, which reads gzip and plain files alike. Every failure is
// reported as "<context>: <path>: <what>".
class IdxFile {
 public:
  IdxFile(const std::string& path, const std::string& context)
      : prefix_(context + ": " + path + ": ") {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (!fs::exists(status)) fail("file not found");
    if (fs::is_directory(status)) fail("is a directory, expected an IDX file");
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) fail(cat_str("cannot open (", std::strerror(errno), ")"));
    gzbuffer(file_, 1 << 17);
  }
  ~IdxFile() {
    if (file_) gzclose(file_);
  }
  IdxFile(const IdxFile&) = delete;
  IdxFile& operator=(const IdxFile&) = delete;

  [[noreturn]] void fail(const std::string& what) const { throw Error(prefix_ + what); }

  // Reads up to n bytes and returns how many there were; a corrupt gzip stream throws.
  int64_t read(void* dst, int64_t n) {
    char* out = static_cast<char*>(dst);
    int64_t done = 0;
    while (done < n) {
      const unsigned ask = static_cast<unsigned>(std::min<int64_t>(n - done, INT_MAX / 2));
      const int got = gzread(file_, out + done, ask);
      if (got < 0) fail(cat_str("corrupt gzip data (", zlib_message(), ")"));
      if (got == 0) break;
      done += got;
    }
    return done;
  }

  // True when the input ended inside a gzip stream (the file was cut short).
  bool stream_cut() const {
    int code = Z_OK;
    gzerror(file_, &code);
    return code == Z_BUF_ERROR;
  }

  // After the declared data: nothing may follow, and a gzip stream must be complete (its
  // trailer holds the checksum, verified on the way).
  void expect_end(const std::string& what) {
    char extra;
    if (read(&extra, 1) != 0)
      fail(cat_str("more data than the header declares (", what, "): wrong count in header?"));
    if (stream_cut()) fail("truncated gzip stream (data complete, checksum missing)");
  }

 private:
  std::string zlib_message() const {
    int code = Z_OK;
    const char* text = gzerror(file_, &code);
    return text && *text ? text : "unknown zlib error";
  }

  std::string prefix_;
  gzFile file_ = nullptr;
};

uint32_t big_endian(const unsigned char* b) {
  return uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 | uint32_t{b[3]};
}

// Reads an IDX header whose magic is one of `magics` (magic i has dims[i] dimensions) and
// returns its sizes.
std::vector<int64_t> read_header(IdxFile& file, const std::vector<uint32_t>& magics,
                                 const std::vector<int>& dims, const char* kind) {
  unsigned char header[4 + 4 * 4] = {};
  int64_t got = file.read(header, 4);
  const uint32_t magic = big_endian(header);
  size_t which = 0;
  while (which < magics.size() && magics[which] != magic) ++which;
  if (got == 4 && which == magics.size()) {
    std::string expected = hex32(magics[0]);
    for (size_t i = 1; i < magics.size(); ++i) expected += " or " + hex32(magics[i]);
    file.fail(cat_str("bad magic ", hex32(magic), ", expected ", expected, " (not an IDX ", kind,
                      " file)"));
  }
  const int n = dims[which < dims.size() ? which : 0];
  const int64_t header_bytes = 4 * (1 + n);
  if (got == 4) got += file.read(header + 4, header_bytes - 4);
  if (got < header_bytes)
    file.fail(
        cat_str("truncated header: ", got, " bytes, an IDX ", kind, " header has ", header_bytes));
  std::vector<int64_t> sizes(n);
  for (int i = 0; i < n; ++i) sizes[i] = big_endian(header + 4 * (1 + i));
  return sizes;
}

// Reads exactly `bytes` bytes of data after the header, then checks the file ends there.
std::vector<uint8_t> read_data(IdxFile& file, int64_t bytes, const std::string& what) {
  std::vector<uint8_t> data;
  int64_t done = 0;
  while (done < bytes) {
    const int64_t chunk = std::min(kReadChunk, bytes - done);
    data.resize(done + chunk);
    const int64_t got = file.read(data.data() + done, chunk);
    done += got;
    if (got < chunk)
      file.fail(cat_str("truncated: header declares ", what, " (", bytes,
                        " bytes after the header), the file holds ", done,
                        file.stream_cut() ? " (gzip stream cut short)" : ""));
  }
  file.expect_end(what);
  return data;
}

// The image header's sizes, checked against the limits.
IdxImages read_images_header(IdxFile& file) {
  const std::vector<int64_t> sizes =
      read_header(file, {kIdxImagesMagic, kIdxColourImagesMagic}, {3, 4}, "image");
  IdxImages out;
  out.count = sizes[0];
  out.rows = sizes[1];
  out.cols = sizes[2];
  out.channels = sizes.size() == 4 ? sizes[3] : 1;
  if (out.count > kIdxMaxItems)
    file.fail(
        cat_str("header declares ", out.count, " images, more than the limit of ", kIdxMaxItems));
  if (out.rows < 1 || out.cols < 1 || out.rows > kIdxMaxSide || out.cols > kIdxMaxSide)
    file.fail(cat_str("header declares ", out.rows, "x", out.cols,
                      " images, expected sides between 1 and ", kIdxMaxSide));
  if (out.channels < 1 || out.channels > kIdxMaxChannels)
    file.fail(cat_str("header declares ", out.channels, " channels, expected between 1 and ",
                      kIdxMaxChannels));
  const int64_t bytes = out.count * out.rows * out.cols * out.channels;
  if (bytes > kMaxDataBytes)
    file.fail(cat_str("header declares ", bytes, " bytes of pixels, more than the limit of ",
                      kMaxDataBytes));
  return out;
}

}  // namespace

IdxImages read_idx_images_header(const std::string& path, const std::string& context) {
  IdxFile file(path, context);
  return read_images_header(file);
}

IdxImages read_idx_images(const std::string& path, const std::string& context) {
  IdxFile file(path, context);
  IdxImages out = read_images_header(file);
  const std::string what =
      out.channels == 1
          ? cat_str(out.count, " images of ", out.rows, "x", out.cols)
          : cat_str(out.count, " images of ", out.rows, "x", out.cols, "x", out.channels);
  out.pixels = read_data(file, out.count * out.rows * out.cols * out.channels, what);
  return out;
}

IdxLabels read_idx_labels(const std::string& path, const std::string& context) {
  IdxFile file(path, context);
  IdxLabels out;
  out.count = read_header(file, {kIdxLabelsMagic}, {1}, "label")[0];
  if (out.count > kIdxMaxItems)
    file.fail(
        cat_str("header declares ", out.count, " labels, more than the limit of ", kIdxMaxItems));
  out.labels = read_data(file, out.count, cat_str(out.count, " labels"));
  return out;
}

}  // namespace vg::data
