#include "models/run_folder.h"

#include <climits>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/core/error.h"
#include "engine/io/checkpoint.h"

namespace vg {

namespace fs = std::filesystem;
using nlohmann::json;

bool make_run_folder(const std::string& dir, bool must_be_new) {
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  if (fs::exists(status)) {
    check(fs::is_directory(status), dir, ": exists and is not a folder (choose another --out)");
    const fs::path last = fs::path(dir) / "last.json";
    // A run stopped before its first checkpoint has nothing to resume from.
    const std::string way =
        fs::exists(last) ? "resume it with --resume " + last.string() + " or choose another --out"
                         : "it saved no checkpoint to resume; choose another --out, or delete " +
                               dir + " to start it again";
    if (must_be_new)
      for (const char* file : {"config.json", "last.json", "metrics.jsonl"})
        check(!fs::exists(fs::path(dir) / file), dir, " already holds a run (", file, "): ", way);
    return false;
  }
  fs::create_directories(dir, ec);
  check(!ec, dir, ": cannot create the run folder (", ec.message(), ")");
  return true;
}

void trim_metrics(const std::string& dir, int64_t step) {
  const fs::path path = fs::path(dir) / "metrics.jsonl";
  if (!fs::exists(path)) return;
  std::ifstream in(path, std::ios::binary);
  std::stringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  std::string kept;
  size_t begin = 0;
  for (size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1) {
    const std::string line = text.substr(begin, end - begin);
    const json record = json::parse(line, nullptr, false);
    // A line that does not parse was cut short by a kill; records past `step` come again.
    const bool later = !record.is_discarded() && record.is_object() && record.contains("step") &&
                       record["step"].is_number_integer() && record["step"].get<int64_t>() > step;
    if (!record.is_discarded() && !later) kept += line + "\n";
  }
  if (kept != text) write_file_atomically(path.string(), kept);
}

int64_t latest_saved_step(const std::string& dir) {
  const fs::path last = fs::path(dir) / "last.json";
  if (!fs::exists(last)) return -1;
  try {
    return load_checkpoint(last.string()).step;
  } catch (const Error&) {
    return INT64_MAX;
  }
}

std::string branch_folder_name(const std::string& dir, int64_t step) {
  std::string base = fs::path(dir).lexically_normal().string();
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  base = cat_str(base, "-from-step", step);
  std::string name = base;
  for (int n = 2; fs::exists(name); ++n) name = cat_str(base, "-", n);
  return name;
}

void copy_run_history(const std::string& from, const std::string& to, int64_t step) {
  for (const char* file : {"config.json", "metrics.jsonl"}) {
    const fs::path source = fs::path(from) / file;
    if (!fs::exists(source)) continue;
    std::ifstream in(source, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    write_file_atomically((fs::path(to) / file).string(), text.str());
  }
  trim_metrics(to, step);
}

}  // namespace vg
