// vitgrad: one binary, git-style subcommands.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/storage.h"
#include "engine/kernels/blas.h"
#include "engine/kernels/kernel_settings.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace {

const char* kUsage =
    "usage: vitgrad <command> [options]\n"
    "\n"
    "commands:\n"
    "  train      train a ViT (Fashion-MNIST by default), or resume a run\n"
    "  eval       loss and accuracy of a checkpoint on a data split\n"
    "  export     the weights of a checkpoint as a smaller checkpoint, safetensors or ONNX\n"
    "  import     a checkpoint from safetensors weights (timm's or a vitgrad export)\n"
    "  summary    per-layer output shapes, parameters and forward FLOPs of a model\n"
    "  gradcheck  the float64 gradient check of every op and layer\n"
    "  bench      time training steps: images/s, GFLOP/s, peak memory\n"
    "  plot       training curves from metrics.jsonl files as an SVG chart\n"
    "  ablate     LayerNorm, LayerScale, LearnableScaler and GRN on one deep ViT: a report\n"
    "  graph      the autograd graph of one forward pass and loss as Graphviz DOT\n"
    "  demo       a short tour of the engine: a function, backward() and gradcheck\n"
    "\n"
    "`vitgrad <command> --help` describes a command.\n";

using Command = int (*)(const std::vector<std::string>&);
const std::pair<const char*, Command> kCommands[] = {
    {"train", vg::tools::run_train},         {"eval", vg::tools::run_eval},
    {"export", vg::tools::run_export},       {"import", vg::tools::run_import},
    {"summary", vg::tools::run_summary},     {"gradcheck", vg::tools::run_gradcheck},
    {"graph", vg::tools::run_graph},         {"demo", vg::tools::run_demo},
    {"plot", vg::tools::run_plot},           {"bench", vg::tools::run_bench},
    {"ablate", vg::tools::run_ablate},
};

// Two libraries read their settings once, when they are loaded, so vitgrad sets them by
// starting itself again once (at most) with a changed environment:
// - OPENBLAS_CORETYPE overrides OpenBLAS's choice of kernels. Set to a family narrower than
//   the CPU (e.g. Haswell's AVX2 on an AVX-512 CPU) it halves OpenBLAS's speed, so
//   it is dropped, unless VITGRAD_KEEP_CORETYPE is set to a value other than 0. Each kernel
//   family sums in its own order, which reaches only the double products (gradient
//   checks) and float ones on a CPU without AVX2 and FMA (`bench` prints the family).
//   Unset, OpenBLAS picks a family from the CPU's model number; one it does not know yet (a
//   Xeon newer than the library) gets its oldest kernels, so vitgrad names the AVX-512 family.
// - OMP_WAIT_POLICY unset lets OpenMP threads spin for about 3 ms before they sleep. Every op
//   opens a parallel region, and on cores that other processes also use a spinning thread
//   holds the core the thread it waits for needs: a training step measured 3x slower than
//   with passive waiting on a loaded 2-core machine. Purely passive threads sleep at once,
//   though, and waking one costs tens of microseconds, a few hundred times per step. So
//   when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set, threads spin for 1000 rounds
//   (about 10 us) and then sleep: on two idle cores 10-25% faster than purely passive for
//   the small models, and about 9% slower than passive next to a busy process, where 3 ms
//   of spinning was up to 2.8x slower. Set OMP_WAIT_POLICY (passive, active) or
//   GOMP_SPINCOUNT to choose otherwise.
void choose_library_settings(char** argv) {
  bool restart = false;
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  const char* keep = std::getenv("VITGRAD_KEEP_CORETYPE");
  const bool keep_core = keep && *keep && std::strcmp(keep, "0") != 0;
  if (forced && !keep_core && vg::blas_core_narrower_than_cpu(forced)) {
    setenv("VITGRAD_DROPPED_CORETYPE", forced, 1);
    unsetenv("OPENBLAS_CORETYPE");
    restart = true;
  } else if (const char* core = vg::blas_core_for_cpu()) {
    setenv("VITGRAD_UNRECOGNISED_CORE", vg::blas_core_name(), 1);
    setenv("OPENBLAS_CORETYPE", core, 1);
    restart = true;
  }
  if (!std::getenv("OMP_WAIT_POLICY")) {
    if (!std::getenv("GOMP_SPINCOUNT")) setenv("GOMP_SPINCOUNT", "1000", 1);
    setenv("OMP_WAIT_POLICY", "passive", 1);
    restart = true;
  }
  if (!restart) return;
  execv("/proc/self/exe", argv);
  // exec failed: go on with the settings the libraries already read
  if (const char* dropped = std::getenv("VITGRAD_DROPPED_CORETYPE")) {
    setenv("OPENBLAS_CORETYPE", dropped, 1);
    unsetenv("VITGRAD_DROPPED_CORETYPE");
  }
  if (std::getenv("VITGRAD_UNRECOGNISED_CORE")) {
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("VITGRAD_UNRECOGNISED_CORE");
  }
}

}  // namespace

int main(int argc, char** argv) {
  choose_library_settings(argv);
  vg::keep_freed_heap_memory();
  if (argc < 2) {  // misuse like any other: one line and exit code 2
    std::cerr << "vitgrad: no command given (vitgrad --help lists them)\n";
    return 2;
  }
  if (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::cout << kUsage;
    return 0;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    vg::check_kernel_settings();
    std::vector<std::string> names;
    for (const auto& [name, run] : kCommands) {
      if (command == name) return run(args);
      names.push_back(name);
    }
    const std::string guess = vg::tools::did_you_mean(command, names);
    throw vg::tools::UsageError("vitgrad: unknown command '" + command + "'" +
                                (guess.empty() ? " (see vitgrad --help)"
                                               : " (did you mean " + guess + "?)"));
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
