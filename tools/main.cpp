// vitgrad: one binary, git-style subcommands.
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "engine/error.h"
#include "tools/commands.h"

namespace {

const char* kUsage =
    "usage: vitgrad <command> [options]\n"
    "\n"
    "commands:\n"
    "  train      train a ViT (Fashion-MNIST by default), or resume a run\n"
    "  eval       loss and accuracy of a checkpoint on a data split\n"
    "  summary    per-layer output shapes, parameters and forward FLOPs of a model\n"
    "  gradcheck  the float64 gradient check of every op and layer\n"
    "  bench      time training steps: images/s, GFLOP/s, peak memory\n"
    "  plot       training curves from metrics.jsonl files as an SVG chart\n"
    "  graph      the autograd graph of one forward pass and loss as Graphviz DOT\n"
    "  demo       a short tour of the engine: a function, backward() and gradcheck\n"
    "\n"
    "`vitgrad <command> --help` describes a command.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "train") return vg::tools::run_train(args);
    if (command == "eval") return vg::tools::run_eval(args);
    if (command == "summary") return vg::tools::run_summary(args);
    if (command == "graph") return vg::tools::run_graph(args);
    if (command == "demo") return vg::tools::run_demo(args);
    if (command == "plot") return vg::tools::run_plot(args);
    throw vg::tools::UsageError("vitgrad: unknown command '" + command + "' (see vitgrad --help)");
  } catch (const vg::tools::UsageError& e) {
    std::cerr << e.what() << "\n";  // already "vitgrad <command>: ..."
    return 2;
  } catch (const vg::Error& e) {
    std::cerr << "vitgrad: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "vitgrad: internal error: " << e.what() << "\n";
    return 3;
  }
}
