// libFuzzer harness of the IDX reader: any bytes as an image file and as a label file,
// plain or gzipped (zlib tells them apart). A vg::Error is the expected answer to bad
// input; anything else (a crash, another exception, a sanitizer report, a hang or an
// allocation of what the header claims rather than what the file holds) is a bug.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "engine/core/error.h"
#include "engine/data/idx.h"

namespace {

// One file per fuzzing process, rewritten for every input.
const std::string& scratch_path() {
  static const std::string path = [] {
    char name[] = "/tmp/vitgrad_idx_fuzz_XXXXXX";
    const int fd = ::mkstemp(name);
    if (fd >= 0) ::close(fd);
    return std::string(name);
  }();
  static const struct Cleanup {
    ~Cleanup() { ::unlink(path.c_str()); }
  } cleanup;
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = scratch_path();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    const vg::data::IdxImages images = vg::data::read_idx_images(path, "fuzz");
    // The reader must return exactly what its header declares (channels: 1 for a 3-dimensional
    // file, the fourth size for a 4-dimensional one).
    if (static_cast<int64_t>(images.pixels.size()) !=
        images.count * images.rows * images.cols * images.channels)
      __builtin_trap();
  } catch (const vg::Error&) {
  }
  try {
    const vg::data::IdxLabels labels = vg::data::read_idx_labels(path, "fuzz");
    if (static_cast<int64_t>(labels.labels.size()) != labels.count) __builtin_trap();
  } catch (const vg::Error&) {
  }
  return 0;
}
