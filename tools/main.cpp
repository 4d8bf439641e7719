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
    "  demo    a short tour of the engine: a function, backward() and gradcheck\n"
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
    if (command == "demo") return vg::tools::run_demo(args);
    throw vg::tools::UsageError("unknown command '" + command + "' (see vitgrad --help)");
  } catch (const vg::tools::UsageError& e) {
    std::cerr << "vitgrad: " << e.what() << "\n";
    return 2;
  } catch (const vg::Error& e) {
    std::cerr << "vitgrad: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "vitgrad: internal error: " << e.what() << "\n";
    return 3;
  }
}
