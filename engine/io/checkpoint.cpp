#include "engine/io/checkpoint.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <vector>

#include "engine/io/json_tensor.h"

namespace vg {
namespace {

using nlohmann::json;

void expect(bool ok, const std::string& source, const std::string& what) {
  if (!ok) throw Error(source + ": " + what);
}

const json& section(const json& doc, const char* key, const std::string& source) {
  expect(doc.contains(key), source, cat_str("missing entry '", key, "'"));
  return doc.at(key);
}

// nlohmann keeps the last of two equal keys without a word; in a checkpoint that means a
// damaged or hand-edited file, so the parse callback notes the first repeated key, with
// the keys that lead to it, in `found`.
json::parser_callback_t duplicate_key_finder(std::string& found) {
  struct State {
    std::vector<std::set<std::string>> keys;  // the keys seen so far in each open object
    std::vector<std::string> path;            // the key (or "[]") at each depth
  };
  auto state = std::make_shared<State>();
  return [state, &found](int depth, json::parse_event_t event, json& parsed) {
    const size_t d = static_cast<size_t>(depth);
    State& st = *state;
    if (st.keys.size() < d + 2) st.keys.resize(d + 2);
    if (st.path.size() < d + 2) st.path.resize(d + 2);
    if (event == json::parse_event_t::object_start) st.keys[d + 1].clear();
    if (event == json::parse_event_t::array_start) st.path[d + 1] = "[]";
    if (event == json::parse_event_t::key) {
      const std::string& key = parsed.get_ref<const std::string&>();
      st.path[d] = key;
      if (!st.keys[d].insert(key).second && found.empty()) {
        std::string where;
        for (size_t i = 1; i < d; ++i) where += (where.empty() ? "'" : " / '") + st.path[i] + "'";
        found = cat_str("key '", key, "' appears twice",
                        where.empty() ? std::string(" at the top level") : " in " + where);
      }
    }
    return true;
  };
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const fs::path temp =
      folder / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()));
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
  json doc = {{"format", kCheckpointFormat},
              {"version", kCheckpointVersion},
              {"config", c.config},
              {"model", std::move(model)},
              {"optimizer", c.optimizer},
              {"scheduler", c.scheduler},
              {"rng", c.rng},
              {"data", c.data},
              {"step", c.step},
              {"extra", c.extra}};
  return doc.dump();
}

void save_checkpoint(const std::string& path, const Checkpoint& c) {
  write_file_atomically(path, checkpoint_to_string(c));
}

Checkpoint parse_checkpoint(const std::string& text, const std::string& source) {
  json doc;
  std::string duplicate;
  try {
    doc = json::parse(text, duplicate_key_finder(duplicate));
  } catch (const json::parse_error& e) {
    throw Error(
        cat_str(source, ": not a valid JSON document (truncated or damaged?) at byte ", e.byte));
  } catch (const json::exception& e) {
    // A number too large for a double (1e999) is an out_of_range error, not a parse_error.
    throw Error(cat_str(source, ": not a valid JSON document (", json_reason(e), ")"));
  }
  expect(duplicate.empty(), source, duplicate);
  expect(doc.is_object(), source, "not a checkpoint (the document is not a JSON object)");
  const json& format = section(doc, "format", source);
  expect(format.is_string() && format == kCheckpointFormat, source,
         cat_str("format is ", format.dump(), ", expected \"", kCheckpointFormat, "\""));
  const json& version = section(doc, "version", source);
  expect(version.is_number_integer() && version == kCheckpointVersion, source,
         cat_str("version ", version.dump(), " is not supported (this build reads version ",
                 kCheckpointVersion, ")"));
  static const char* known[] = {"format",    "version", "config", "model", "optimizer",
                                "scheduler", "rng",     "data",   "step",  "extra"};
  for (const auto& [key, value] : doc.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    expect(ok, source, cat_str("unexpected entry '", key, "'"));
  }

  Checkpoint c;
  c.config = section(doc, "config", source);
  expect(c.config.is_object(), source, "entry 'config' is not an object");
  const json& model = section(doc, "model", source);
  expect(model.is_object(), source, "entry 'model' is not an object");
  for (const auto& [name, value] : model.items())
    c.model[name] = tensor_from_json(value, cat_str(source, ": model entry '", name, "'"));
  c.optimizer = section(doc, "optimizer", source);
  expect(c.optimizer.is_null() || c.optimizer.is_object(), source,
         "entry 'optimizer' is neither null nor an object");
  c.scheduler = section(doc, "scheduler", source);
  expect(c.scheduler.is_null() || c.scheduler.is_object(), source,
         "entry 'scheduler' is neither null nor an object");
  c.rng = section(doc, "rng", source);
  expect(c.rng.is_object(), source, "entry 'rng' is not an object");
  c.data = section(doc, "data", source);
  expect(c.data.is_object(), source, "entry 'data' is not an object");
  const json& step = section(doc, "step", source);
  expect(step.is_number_integer() && step.get<int64_t>() >= 0, source,
         "entry 'step' is not a non-negative integer");
  c.step = step.get<int64_t>();
  if (doc.contains("extra")) {
    c.extra = doc.at("extra");
    expect(c.extra.is_object(), source, "entry 'extra' is not an object");
  }
  return c;
}

Checkpoint load_checkpoint(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(cat_str(path, ": is a folder, expected a checkpoint file (such as last.json)"));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat_str(path, ": cannot open (", std::strerror(errno), ")"));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_checkpoint(text.str(), path);
}

}  // namespace vg
