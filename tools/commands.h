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

int run_demo(const std::vector<std::string>& args);

}  // namespace vg::tools
