// The subcommands of the `vitgrad` command line.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace vg::tools {

// Misuse of the command line: printed as one line on stderr, exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

int run_train(const std::vector<std::string>& args);
int run_eval(const std::vector<std::string>& args);
// A weights-only copy (config and model) of a checkpoint.
int run_export(const std::vector<std::string>& args);
// A checkpoint from safetensors weights (a timm ViT's or a vitgrad export).
int run_import(const std::vector<std::string>& args);
// Per-layer table of output shapes, parameters and FLOPs.
int run_summary(const std::vector<std::string>& args);
// The autograd graph of one forward pass and loss, as Graphviz DOT.
int run_graph(const std::vector<std::string>& args);
// Times training steps: ms/step, images/s, matmul GFLOP/s, peak RSS, OpenBLAS kernels.
int run_bench(const std::vector<std::string>& args);
// The float64 gradient check of every op and layer; exit code 1 when one fails.
int run_gradcheck(const std::vector<std::string>& args);
int run_demo(const std::vector<std::string>& args);
// Training curves from metrics.jsonl files as an SVG chart.
int run_plot(const std::vector<std::string>& args);
// LayerNorm / LayerScale / LearnableScaler / GRN trained side by side, with a report.
int run_ablate(const std::vector<std::string>& args);

}  // namespace vg::tools
