#include "tools/args.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace vg::tools {
namespace {

// Optimal string alignment distance: inserting, deleting or replacing a character, and
// swapping two neighbours ("--warmpu"), each cost one.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// "--steps", "-h": what a forgotten value leaves in its place. "-1" and "-.5" are numbers.
bool looks_like_flag(const std::string& s) {
  return s.size() >= 2 && s[0] == '-' && (s[1] == '-' || std::isalpha((unsigned char)s[1]));
}

// The words of a flag or key in order ("--min-lr", "min_lr" -> "lr min"), so that a name
// with its words swapped is recognised.
std::string sorted_words(const std::string& name) {
  std::vector<std::string> words;
  std::string word;
  for (char c : name + "-") {
    if (c != '-' && c != '_') {
      word += c;
    } else if (!word.empty()) {
      words.push_back(word);
      word.clear();
    }
  }
  std::sort(words.begin(), words.end());
  std::string joined;
  for (const std::string& w : words) joined += w + " ";
  return joined;
}

}  // namespace

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const size_t dashes = std::min(word.find_first_not_of('-'), word.size());
  const size_t letters = word.size() - dashes;
  if (letters >= 2) {  // "--label" is the start of --label-smoothing only
    std::vector<std::string> longer;
    for (const std::string& c : candidates)
      if (c.size() > word.size() && c.compare(0, word.size(), word) == 0) longer.push_back(c);
    if (longer.size() == 1) return longer[0];
    for (const std::string& c : candidates)
      if (sorted_words(c) == sorted_words(word)) return c;
  }
  std::string best;
  size_t best_distance = std::max<size_t>(1, letters / 3) + 1;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_distance) best = c, best_distance = d;
  }
  return best;
}

ArgParser::ArgParser(std::string command, std::string usage, std::vector<Flag> flags,
                     size_t min_positionals, size_t max_positionals)
    : command_(std::move(command)),
      usage_(std::move(usage)),
      flags_(std::move(flags)),
      min_positionals_(min_positionals),
      max_positionals_(max_positionals) {}

const Flag* ArgParser::find(const std::string& name) const {
  for (const Flag& f : flags_)
    if (f.name == name) return &f;
  return nullptr;
}

void ArgParser::alias(const std::string& other_name, const std::string& flag) {
  if (!find(flag)) fail("internal: alias " + other_name + " of undeclared flag " + flag);
  aliases_[other_name] = flag;
}

void ArgParser::implicit_value(const std::string& flag, const std::string& value) {
  if (!find(flag)) fail("internal: implicit value of undeclared flag " + flag);
  implicit_[flag] = value;
}

void ArgParser::fail(const std::string& message) const {
  throw UsageError("vitgrad " + command_ + ": " + message);
}

void ArgParser::warn(const std::string& message) const {
  std::cerr << "vitgrad " << command_ << ": warning: " << message << "\n";
}

void ArgParser::parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      help_ = true;
      return;
    }
    // Long flags start with "--"; a short one ("-o") is a flag only if the command declares it.
    const bool short_flag = arg.size() == 2 && arg[0] == '-' && arg[1] != '-' && find(arg);
    if (!short_flag && (arg.size() < 2 || arg.compare(0, 2, "--") != 0 || arg == "--")) {
      positionals_.push_back(arg);
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string given = arg.substr(0, eq);
    const auto alias = aliases_.find(given);
    const std::string name = alias == aliases_.end() ? given : alias->second;
    const Flag* flag = find(name);
    if (!flag) {
      std::vector<std::string> names = {"--help"};
      for (const Flag& f : flags_) names.push_back(f.name);
      for (const auto& [other, own] : aliases_) names.push_back(other);
      const std::string guess = did_you_mean(name, names);
      fail("unknown flag " + name + (guess.empty() ? " (see vitgrad " + command_ + " --help)"
                                                   : " (did you mean " + guess + "?)"));
    }
    if (values_.count(name))
      fail(name + " given twice" + (given != name ? " (as " + given + ")" : ""));
    if (flag->value_name.empty()) {
      if (eq != std::string::npos) fail(given + " takes no value");
      values_[name] = "";
    } else if (eq != std::string::npos) {
      values_[name] = arg.substr(eq + 1);
    } else if (implicit_.count(name) && (i + 1 >= args.size() || looks_like_flag(args[i + 1]))) {
      values_[name] = implicit_.at(name);
    } else {
      if (i + 1 >= args.size()) fail(given + " needs a value (" + flag->value_name + ")");
      const std::string& value = args[++i];
      if (looks_like_flag(value))
        fail(given + " needs a value, got " + value + " (write " + given + "=" + value +
             " if that is the value)");
      values_[name] = value;
    }
  }
  if (positionals_.size() < min_positionals_ || positionals_.size() > max_positionals_) {
    if (max_positionals_ == 0) fail("unexpected argument '" + positionals_[0] + "'");
    fail("expected " + std::to_string(min_positionals_) +
         (max_positionals_ > min_positionals_ ? " to " + std::to_string(max_positionals_) : "") +
         " positional argument(s), got " + std::to_string(positionals_.size()));
  }
}

std::string ArgParser::help() const {
  std::ostringstream out;
  out << "usage: " << usage_ << "\n";
  if (!flags_.empty()) out << "\noptions:\n";
  for (const Flag& f : flags_) {
    std::string left = "  " + f.name + (f.value_name.empty() ? "" : " " + f.value_name);
    if (left.size() < 26)
      left.resize(26, ' ');
    else
      left += "  ";
    std::string others;
    for (const auto& [other, own] : aliases_)
      if (own == f.name) others += (others.empty() ? "" : ", ") + other;
    out << left << f.help << (others.empty() ? "" : " [also " + others + "]") << "\n";
  }
  return out.str();
}

std::string ArgParser::text(const std::string& flag, const std::string& fallback) const {
  auto it = values_.find(flag);
  return it == values_.end() ? fallback : it->second;
}

int64_t ArgParser::integer(const std::string& flag, int64_t fallback, int64_t min,
                           int64_t max) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return fallback;
  const std::string& s = it->second;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE)
    fail(flag + " expects a whole number, got '" + s + "'");
  // A bound of INT64_MAX / 2 and above only guards against overflow: not worth printing.
  if (v < min || v > max)
    fail(flag +
         (max >= INT64_MAX / 2
              ? " must be at least " + std::to_string(min)
              : " must be between " + std::to_string(min) + " and " + std::to_string(max)) +
         ", got " + s);
  return v;
}

double ArgParser::number(const std::string& flag, double fallback, double min, double max) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return fallback;
  return parse_number(flag, it->second, min, max);
}

double ArgParser::parse_number(const std::string& flag, const std::string& s, double min,
                               double max) const {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    fail(flag + " expects a number, got '" + s + "'");
  if (v < min || v > max) {
    std::ostringstream range;
    range << flag << " must be between " << min << " and " << max << ", got " << s;
    fail(range.str());
  }
  return v;
}

std::vector<double> ArgParser::numbers(const std::string& flag, double min, double max) const {
  std::vector<double> out;
  if (!has(flag)) return out;
  const std::string list = text(flag);
  size_t start = 0;
  for (;;) {
    const size_t comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? comma : comma - start);
    out.push_back(parse_number(flag, item, min, max));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::string ArgParser::choice(const std::string& flag, const std::string& fallback,
                              const std::vector<std::string>& choices) const {
  const std::string v = text(flag, fallback);
  std::string list;
  for (const std::string& c : choices) {
    if (c == v) return v;
    list += (list.empty() ? "" : "|") + c;
  }
  const std::string guess = did_you_mean(v, choices);
  fail(flag + " must be one of " + list + ", got '" + v + "'" +
       (guess.empty() ? "" : " (did you mean " + guess + "?)"));
}

}  // namespace vg::tools
