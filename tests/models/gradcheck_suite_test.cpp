#include "models/gradcheck_suite.h"

#include <doctest/doctest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

using namespace vg;

namespace {

std::set<std::string> families(const std::vector<GradcheckCase>& cases) {
  std::set<std::string> out;
  for (const GradcheckCase& c : cases) out.insert(gradcheck_family(c.name));
  return out;
}

// Every match of `pattern`'s first group in the source files named.
std::set<std::string> declared(const std::vector<std::string>& files, const std::string& pattern) {
  std::set<std::string> names;
  const std::regex re(pattern);
  for (const std::string& file : files) {
    std::ifstream in(std::string(VG_SOURCE_DIR) + "/" + file);
    REQUIRE_MESSAGE(in.good(), file);
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (auto it = std::sregex_iterator(s.begin(), s.end(), re); it != std::sregex_iterator(); ++it)
      names.insert((*it)[1]);
  }
  return names;
}

}  // namespace

TEST_CASE("every gradient check of the list passes, and the names are unique") {
  std::set<std::string> names;
  for (const GradcheckCase& c : gradcheck_cases()) {
    INFO(c.name);
    CHECK(names.insert(c.name).second);
    const GradcheckResult r = c.run();
    INFO(r.summary());
    CHECK(r.passed);
    CHECK(r.checked_elements > 0);
  }
}

TEST_CASE("the list checks every op that engine/ops/ops.h declares") {
  const std::set<std::string> checked = families(op_gradcheck_cases());
  const std::set<std::string> ops = declared({"engine/ops/ops.h"}, R"(\nTensor (\w+)\()");
  CHECK(ops.size() >= 30);
  for (const std::string& op : ops) {
    INFO("op ", op, " has no gradient check in models/gradcheck_ops.cpp");
    CHECK(checked.count(op) == 1);
  }
  CHECK(checked.count("reshape") == 1);  // the view, a member of Tensor
}

TEST_CASE("the list checks every layer (a Module in layers/) and the ViT") {
  const std::set<std::string> checked = families(module_gradcheck_cases());
  const std::set<std::string> layers = declared(
      {"layers/activation.h", "layers/attention.h", "layers/block.h", "layers/conv2d.h",
       "layers/conv_stem.h", "layers/dropout.h",
       "layers/global_response_norm.h", "layers/layer_norm.h", "layers/layer_scale.h",
       "layers/learnable_scaler.h", "layers/linear.h", "layers/mlp.h", "layers/patch_embed.h"},
      R"(class (\w+) : public (?:Module|TokenNorm))");
  CHECK(layers.size() >= 15);
  for (const std::string& layer : layers) {
    INFO("layer ", layer, " has no gradient check in models/gradcheck_modules.cpp");
    CHECK(checked.count(layer) == 1);
  }
  CHECK(checked.count("ViT") == 1);
}

TEST_CASE("gradcheck_family is the name up to the first colon") {
  CHECK(gradcheck_family("add:row") == "add");
  CHECK(gradcheck_family("ViT:learnable_scaler+grn+drop") == "ViT");
  CHECK(gradcheck_family("LayerNorm") == "LayerNorm");
}
