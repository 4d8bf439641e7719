// Runs the vitgrad binary as a user would and captures what it prints.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "engine/kernels/matmul_precision.h"
#include "tests/scratch_dir.h"

namespace vg::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `vitgrad ARGS` with stdout and stderr captured (arguments are passed through the shell);
// `env` ("NAME=value ...") is put before the command.
inline CommandResult vitgrad(const std::string& args, const std::string& env = "") {
  static int counter = 0;
  const auto base = std::filesystem::temp_directory_path() /
                    ("vg_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  const std::string command = env + " " + std::string(VG_VITGRAD_EXE) + " " + args + " >" +
                              base.string() + ".out 2>" + base.string() + ".err </dev/null";
  const int status = std::system(command.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_text(base.string() + ".out");
  r.err = read_text(base.string() + ".err");
  std::filesystem::remove(base.string() + ".out");
  std::filesystem::remove(base.string() + ".err");
  return r;
}

// The environment of a `--amp bf16` run: nothing where the CPU has bf16 units; elsewhere float
// fmas on operands rounded to bf16 stand in for them (VITGRAD_BF16_UNITS=fma, engine/kernels/
// matmul_precision.h), the same mode with other bits, so that training, resuming and evaluating
// in bf16 mode are tested on every CPU with AVX2. No value on a CPU with neither.
inline std::optional<std::string> bf16_run_env() {
  if (bf16_hardware() != Bf16Hardware::none) return "";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return "VITGRAD_BF16_UNITS=fma";
  return std::nullopt;
}

}  // namespace vg::testing
