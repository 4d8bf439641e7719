// Folders for the files a test writes: under the system's temp folder, named for the test
// and the process (so that two runs of the tests at once do not meet), and removed when the
// test program exits, whether its tests passed or not. A crash leaves them to look at.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace vg::testing {

namespace detail {

// The folders this process has made; removed, with what is in them, at exit. Only by the
// process that made them: a forked child that exits normally leaves them to its parent.
struct ScratchFolders {
  pid_t owner = ::getpid();
  std::vector<std::filesystem::path> made;
  ~ScratchFolders() {
    if (::getpid() != owner) return;
    for (const auto& dir : made) {
      std::error_code ignored;  // a folder a test removed itself is fine
      std::filesystem::remove_all(dir, ignored);
    }
  }
};

inline ScratchFolders& scratch_folders() {
  static ScratchFolders folders;
  return folders;
}

}  // namespace detail

// A fresh, empty folder vg_<name>_<pid> for one test (emptied if it was made before).
inline std::filesystem::path scratch_dir(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("vg_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto& made = detail::scratch_folders().made;
  if (std::find(made.begin(), made.end(), dir) == made.end()) made.push_back(dir);
  return dir;
}

}  // namespace vg::testing
