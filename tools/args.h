// Command-line flags of the `vitgrad` subcommands: each command declares its flags once
// (name, value and help), and every misuse becomes one UsageError line, exit code 2.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tools/commands.h"

namespace vg::tools {

struct Flag {
  std::string name;        // "--lr", or a declared short flag such as "-o"
  std::string value_name;  // "X"; empty for a switch such as "--grn"
  std::string help;
};

class ArgParser {
 public:
  ArgParser(std::string command, std::string usage, std::vector<Flag> flags,
            size_t min_positionals = 0, size_t max_positionals = 0);

  // Accepts "--flag VALUE", "--flag=VALUE" and switches; throws UsageError for unknown or
  // repeated flags, missing values and the wrong number of positional arguments. In the
  // "--flag VALUE" form a value that looks like a flag ("--out --no-augment", "--resume -h")
  // is refused: the value was most likely forgotten. Negative numbers ("--lr -1") are values,
  // and "--flag=VALUE" takes any value.
  void parse(const std::vector<std::string>& args);
  // Another name for a declared flag (timm's "--batch-size" for "--batch"): its value is read
  // under the flag's own name, giving both is "given twice", and --help lists it.
  void alias(const std::string& other_name, const std::string& flag);
  // The value a flag takes when it stands alone (last, or followed by another flag), as
  // timm's switch "--amp" means "--amp bf16" here.
  void implicit_value(const std::string& flag, const std::string& value);
  bool help_requested() const { return help_; }
  std::string help() const;  // usage line and one line per flag

  bool has(const std::string& flag) const { return values_.count(flag) > 0; }
  bool on(const std::string& flag) const { return has(flag); }  // a switch
  std::string text(const std::string& flag, const std::string& fallback = "") const;
  int64_t integer(const std::string& flag, int64_t fallback, int64_t min, int64_t max) const;
  double number(const std::string& flag, double fallback, double min, double max) const;
  // A comma-separated list of numbers in [min, max] ("0.5,0.5,0.5"); empty when not given.
  std::vector<double> numbers(const std::string& flag, double min, double max) const;
  std::string choice(const std::string& flag, const std::string& fallback,
                     const std::vector<std::string>& choices) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

  // "vitgrad train: " + message, as a UsageError.
  [[noreturn]] void fail(const std::string& message) const;
  // "vitgrad train: warning: " + message, one line on stderr; the command goes on.
  void warn(const std::string& message) const;

 private:
  const Flag* find(const std::string& name) const;
  // `text` as a number in [min, max]; anything else fails naming `flag`.
  double parse_number(const std::string& flag, const std::string& text, double min,
                      double max) const;

  std::string command_, usage_;
  std::vector<Flag> flags_;
  std::map<std::string, std::string> aliases_;  // other name -> the flag's own name
  std::map<std::string, std::string> implicit_;  // flag -> its value when it stands alone
  size_t min_positionals_, max_positionals_;
  bool help_ = false;
  std::map<std::string, std::string> values_;
  std::vector<std::string> positionals_;
};

// The candidate a mistyped `word` most likely meant: one that `word` is the start of (when
// only one is), or one with the same words in another order ("--lr-min"), else the nearest by edit distance (a swap of two neighbours counts once) if
// at most a third of its letters differ; "" when none is that close.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace vg::tools
