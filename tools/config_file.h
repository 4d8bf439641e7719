// A --config file: a run folder's config.json ({"model": {...}, "train": {...}}, the whole
// recipe as `vitgrad train` wrote it) or a plain ViTConfig object (the model alone).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace vg::tools {

struct ConfigFile {
  std::string path;
  nlohmann::json model;                 // the ViTConfig's keys ({} in a run file without one)
  std::optional<nlohmann::json> train;  // a run file's training options
};

// Reads `path` and checks its shape: an unknown section, or an unknown key in any section,
// is a vg::Error naming the file, the section and the key, with the nearest known one.
// The values are checked by the readers below.
ConfigFile read_config_file(const std::string& path);

}  // namespace vg::tools
