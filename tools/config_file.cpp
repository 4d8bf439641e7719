#include "tools/config_file.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "engine/core/error.h"
#include "models/training.h"
#include "models/vit_config.h"
#include "tools/args.h"

namespace vg::tools {
namespace {

using nlohmann::json;

std::vector<std::string> keys_of(const json& object) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.push_back(key);
  return keys;
}

// " (did you mean 'min_lr'?)", or "" when no known name is close.
std::string guess(const std::string& name, const std::vector<std::string>& known) {
  const std::string g = did_you_mean(name, known);
  return g.empty() ? "" : " (did you mean '" + g + "'?)";
}

// Every key of `section` is one of `known`'s; `where` names the section in the message.
void check_keys(const std::string& path, const std::string& where, const json& section,
                const json& known) {
  check(section.is_object(), path, ": ", where, " must be a JSON object, got ",
        section.type_name());
  for (const auto& [key, value] : section.items())
    if (!known.contains(key))
      throw Error(path + ": unknown key '" + key + "' in " + where +
                  guess(key, keys_of(known)));
}

}  // namespace

ConfigFile read_config_file(const std::string& path) {
  std::ifstream in(path);
  check(bool(in), "cannot read config file ", path);
  std::stringstream text;
  text << in.rdbuf();
  ConfigFile file{path, json::object(), std::nullopt};
  json j;
  try {
    j = json::parse(text.str());
  } catch (const json::exception&) {
    throw Error(path + " is not valid JSON");
  }
  check(j.is_object(), path, ": ViTConfig: expected a JSON object, got ", j.type_name());
  const json model_keys = ViTConfig{}.to_json();
  // A run's file has a "model" or "train" section; anything else is a plain ViTConfig.
  if (!j.contains("model") && !j.contains("train")) {
    check_keys(path, "the ViTConfig", j, model_keys);
    file.model = j;
    return file;
  }
  for (const auto& [section, value] : j.items())
    if (section != "model" && section != "train")
      throw Error(path + ": unknown section '" + section + "'" +
                  guess(section, {"model", "train"}) +
                  "; a run's config.json has 'model' and 'train'");
  if (j.contains("model")) {
    check_keys(path, "section 'model'", j.at("model"), model_keys);
    file.model = j.at("model");
  }
  if (j.contains("train")) {
    check_keys(path, "section 'train'", j.at("train"), TrainOptions{}.to_json());
    file.train = j.at("train");
  }
  return file;
}

}  // namespace vg::tools
