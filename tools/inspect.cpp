// `vitgrad summary` and `vitgrad graph`: what a model is made of, without training it.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "engine/autograd/autograd.h"
#include "engine/autograd/graph_dot.h"
#include "engine/io/checkpoint.h"
#include "engine/ops/ops.h"
#include "models/vit.h"
#include "tools/args.h"
#include "tools/model_flags.h"

namespace vg::tools {
namespace {

struct Row {
  std::string name, type;
  bool ran = false;  // false: fused into a neighbour (layers/fusion.h), counted there
  Shape output;
  int64_t params = 0;
  double flops = 0;
};

// One traced forward pass of `batch` zero images: a row per top-level part and per part of
// a block (blocks.3.attn), not deeper, with the output shape and FLOPs the run recorded.
std::vector<Row> summarise(ViT& model, int64_t batch, double* total_flops) {
  const ViTConfig& c = model.config();
  nn::ForwardTrace trace;
  {
    NoGradGuard no_grad;
    FlopCounter flops;
    model(zeros({batch, c.img_size, c.img_size, c.in_chans}));
    *total_flops = flops.total();
  }
  std::vector<Row> rows;
  for (auto& [path, module] : model.named_modules()) {
    const size_t dots = std::count(path.begin(), path.end(), '.');
    const bool in_block = path.rfind("blocks.", 0) == 0;
    if (path.empty() || dots > (in_block ? 2u : 0u)) continue;
    Row r;
    r.name = path;
    r.type = module->type_name();
    r.params = module->num_parameters();
    for (const nn::ForwardTrace::Call& call : trace.calls()) {
      if (call.path != path) continue;
      r.ran = true;
      r.output = call.output;
      r.flops += call.flops;
    }
    if (r.params == 0 && r.flops == 0) continue;  // eval-mode dropout and friends
    rows.push_back(r);
  }
  return rows;
}

std::string human(double v) {
  std::ostringstream out;
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (std::abs(v) >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  out << std::fixed << std::setprecision(u ? 2 : 0) << v << units[u];
  return out.str();
}

}  // namespace

int run_summary(const std::vector<std::string>& argv) {
  std::vector<Flag> flags = model_flags();
  flags.push_back({"--batch", "N", "images per forward pass for shapes and FLOPs (default 1)"});
  flags.push_back({"--json", "", "the table as one JSON document"});
  ArgParser args("summary", "vitgrad summary [--preset NAME | --config FILE] [model flags] [--json]",
                 flags);
  args.parse(argv);
  if (args.help_requested()) {
    std::cout << args.help();
    return 0;
  }
  const ViTConfig config = model_from_flags(args);
  const int64_t batch = args.integer("--batch", 1, 1, 1 << 20);
  ViT model(config);
  model.eval();
  double total_flops = 0;
  const std::vector<Row> rows = summarise(model, batch, &total_flops);
  if (args.on("--json")) {
    nlohmann::json layers = nlohmann::json::array();
    for (const Row& r : rows)
      layers.push_back({{"name", r.name},
                        {"type", r.type},
                        {"output_shape", r.ran ? nlohmann::json(r.output) : nlohmann::json()},
                        {"fused", !r.ran},
                        {"parameters", r.params},
                        {"flops", r.flops}});
    std::cout << nlohmann::json{{"config", config.to_json()},
                                {"layers", layers},
                                {"total_parameters", model.num_parameters()},
                                {"total_flops", total_flops},
                                {"batch", batch}}
                     .dump()
              << "\n";
    return 0;
  }
  std::cout << std::left << std::setw(24) << "layer" << std::setw(20) << "type" << std::setw(16)
            << "output shape" << std::right << std::setw(12) << "parameters" << std::setw(14)
            << "forward FLOPs" << "\n"
            << std::string(86, '-') << "\n";
  for (const Row& r : rows)
    std::cout << std::left << std::setw(24) << r.name << std::setw(20) << r.type << std::setw(16)
              << (r.ran ? shape_str(r.output) : "fused") << std::right << std::setw(12)
              << r.params << std::setw(14) << (r.ran ? human(r.flops) : "-") << "\n";
  std::cout << std::string(86, '-') << "\n"
            << std::left << std::setw(60) << "total" << std::right << std::setw(12)
            << model.num_parameters() << std::setw(14) << human(total_flops) << "\n"
            << "(FLOPs as the ops count them in one forward pass of " << batch << " image"
            << (batch > 1 ? "s" : "") << "; a training step costs about 3x;\n"
            << " fused: runs inside the neighbouring linear, which counts its FLOPs)\n";
  return 0;
}

int run_graph(const std::vector<std::string>& argv) {
  std::vector<Flag> flags = model_flags();
  flags.push_back({"--batch", "N", "images in the traced batch (default 2)"});
  flags.push_back({"-o", "OUT.dot", "where to write the DOT file"});
  ArgParser args("graph", "vitgrad graph [--preset NAME | --config FILE] [model flags] -o OUT.dot",
                 flags);
  args.parse(argv);
  if (args.help_requested()) {
    std::cout << args.help();
    return 0;
  }
  if (!args.has("-o")) args.fail("-o OUT.dot is required");
  const ViTConfig config = model_from_flags(args);
  const int64_t batch = args.integer("--batch", 2, 1, 1024);
  ViT model(config);
  Rng rng(0);
  Tensor images = randn({batch, config.img_size, config.img_size, config.in_chans}, rng);
  std::vector<int32_t> labels(batch, 0);
  Tensor loss = cross_entropy(model.forward(images), labels);
  write_file_atomically(args.text("-o"), graph_to_dot(loss));
  std::cout << "wrote " << args.text("-o") << " (render: dot -Tsvg " << args.text("-o")
            << " -o graph.svg)\n";
  return 0;
}

}  // namespace vg::tools
