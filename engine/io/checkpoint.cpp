#include "engine/io/checkpoint.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "engine/io/json_reader.h"
#include "engine/io/json_tensor.h"
#include "engine/io/json_writer.h"

namespace vg {
namespace {

using nlohmann::json;

void expect(bool ok, const std::string& source, const std::string& what) {
  if (!ok) throw Error(source + ": " + what);
}

json& section(json& doc, const char* key, const std::string& source) {
  expect(doc.contains(key), source, cat_str("missing entry '", key, "'"));
  return doc.at(key);
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  // (cat_str, not "." + name: GCC 12's -Wrestrict misfires on the latter)
  const fs::path temp =
      folder / cat_str(".", target.filename().string(), ".tmp.", ::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw Error(cat_str(path, ": cannot write (", std::strerror(errno), ")"));
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      ::unlink(temp.c_str());
      throw Error(cat_str(path, ": write failed (", reason, ")"));
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(temp.c_str());
    throw Error(cat_str(path, ": could not flush to disk (", std::strerror(errno), ")"));
  }
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temp.c_str());
    throw Error(cat_str(path, ": could not replace the file (", reason, ")"));
  }
  // Make the rename itself durable.
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void remove_stale_temporaries(const std::string& folder) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    // ".<name>.tmp.<pid>", as write_file_atomically names them.
    const std::string name = entry.path().filename().string();
    const size_t mark = name.rfind(".tmp.");
    if (name.empty() || name[0] != '.' || mark == std::string::npos) continue;
    const std::string pid = name.substr(mark + 5);
    if (pid.empty() || pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos)
      continue;
    if (::kill(static_cast<pid_t>(std::stol(pid)), 0) != 0 && errno == ESRCH)
      fs::remove(entry.path(), ec);
  }
}

std::string checkpoint_to_string(const Checkpoint& c) {
  json model = json::object();
  for (const auto& [name, tensor] : c.model) model[name] = tensor_to_json(tensor, name);
  // The short, readable sections first and the tensors last, so `head -c 2000` shows a run.
  const std::pair<const char*, const json*> sections[] = {
      {"config", &c.config}, {"scheduler", &c.scheduler}, {"rng", &c.rng},
      {"data", &c.data},     {"extra", &c.extra},         {"optimizer", &c.optimizer},
      {"model", &model}};
  size_t size = 128;
  for (const auto& [key, value] : sections) size += json_size_hint(*value);
  std::string out;
  out.reserve(size);
  out += cat_str("{\"format\":\"", kCheckpointFormat, "\",\"version\":", kCheckpointVersion,
                 ",\"step\":", c.step);
  for (const auto& [key, value] : sections) {
    out += cat_str(",\"", key, "\":");
    append_json(out, *value);
  }
  out += '}';
  return out;
}

void save_checkpoint(const std::string& path, const Checkpoint& c) {
  write_file_atomically(path, checkpoint_to_string(c));
}

namespace {

// The checks and the sections of a checkpoint document; its tensors' bytes are let go as
// soon as they are tensors, so a large file is held in memory about once.
Checkpoint from_document(json doc, const std::string& source) {
  expect(doc.is_object(), source, "not a checkpoint (the document is not a JSON object)");
  const json& format = section(doc, "format", source);
  expect(format.is_string() && format == kCheckpointFormat, source,
         cat_str("format is ", format.dump(), ", expected \"", kCheckpointFormat, "\""));
  const json& version = section(doc, "version", source);
  expect(version.is_number_integer() && version.get<int64_t>() >= 1 &&
             version.get<int64_t>() <= kCheckpointVersion,
         source,
         cat_str("version ", version.dump(), " is not supported (this build reads versions 1 and ",
                 kCheckpointVersion, ")"));
  static const char* known[] = {"format",    "version", "config", "model", "optimizer",
                                "scheduler", "rng",     "data",   "step",  "extra"};
  for (const auto& [key, value] : doc.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    expect(ok, source, cat_str("unexpected entry '", key, "'"));
  }

  Checkpoint c;
  c.config = std::move(section(doc, "config", source));
  expect(c.config.is_object(), source, "entry 'config' is not an object");
  json& model = section(doc, "model", source);
  expect(model.is_object(), source, "entry 'model' is not an object");
  for (auto& [name, value] : model.items()) {
    c.model[name] = tensor_from_json(value, cat_str(source, ": model entry '", name, "'"));
    value = nullptr;
  }
  c.optimizer = std::move(section(doc, "optimizer", source));
  expect(c.optimizer.is_null() || c.optimizer.is_object(), source,
         "entry 'optimizer' is neither null nor an object");
  c.scheduler = std::move(section(doc, "scheduler", source));
  expect(c.scheduler.is_null() || c.scheduler.is_object(), source,
         "entry 'scheduler' is neither null nor an object");
  c.rng = std::move(section(doc, "rng", source));
  expect(c.rng.is_object(), source, "entry 'rng' is not an object");
  c.data = std::move(section(doc, "data", source));
  expect(c.data.is_object(), source, "entry 'data' is not an object");
  const json& step = section(doc, "step", source);
  expect(step.is_number_integer() && step.get<int64_t>() >= 0, source,
         "entry 'step' is not a non-negative integer");
  c.step = step.get<int64_t>();
  if (doc.contains("extra")) {
    c.extra = std::move(doc.at("extra"));
    expect(c.extra.is_object(), source, "entry 'extra' is not an object");
  }
  return c;
}

}  // namespace

Checkpoint parse_checkpoint(const std::string& text, const std::string& source) {
  return from_document(read_json_text(text, source), source);
}

Checkpoint load_checkpoint(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(cat_str(path, ": is a folder, expected a checkpoint file (such as last.json)"));
  return from_document(read_json_file(path), path);
}

}  // namespace vg
