// docs/cli.md describes the command line that the binary has: every command gets a section,
// and every flag that `vitgrad <command> --help` lists is named in it (or in the model and
// training flags that several commands share).
#include <doctest/doctest.h>

#include <regex>
#include <set>
#include <sstream>

#include "tests/tools/cli_helpers.h"

using namespace vg::testing;

namespace {

// The text of the section under the heading `## title`, up to the next `## `.
std::string section(const std::string& doc, const std::string& title) {
  const size_t begin = doc.find("\n## " + title + "\n");
  if (begin == std::string::npos) return "";
  const size_t end = doc.find("\n## ", begin + 1);
  return doc.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// The first word of every indented line of a help text: commands, or flags.
std::set<std::string> listed(const std::string& help, const std::string& first_char) {
  std::set<std::string> names;
  const std::regex line("^  (" + first_char + "[a-z0-9-]*)", std::regex::multiline);
  for (auto it = std::sregex_iterator(help.begin(), help.end(), line);
       it != std::sregex_iterator(); ++it)
    names.insert((*it)[1]);
  return names;
}

}  // namespace

TEST_CASE("docs/cli.md has a section for every command and names each of its flags") {
  const std::string doc = read_text(std::string(VG_SOURCE_DIR) + "/docs/cli.md");
  REQUIRE(!doc.empty());
  const std::string shared = section(doc, "Model flags") + section(doc, "Training flags");
  REQUIRE(!shared.empty());
  const std::set<std::string> commands = listed(vitgrad("--help").out, "[a-z]");
  CHECK(commands.size() >= 10);
  for (const std::string& command : commands) {
    const std::string text = section(doc, command);
    INFO("docs/cli.md has no section '## ", command, "'");
    CHECK(!text.empty());
    const CommandResult help = vitgrad(command + " --help");
    REQUIRE(help.exit_code == 0);
    for (const std::string& flag : listed(help.out, "-")) {
      INFO("docs/cli.md does not name ", flag, " of vitgrad ", command);
      const std::regex named(flag + "[^a-z0-9-]");
      CHECK((std::regex_search(text, named) || std::regex_search(shared, named)));
    }
  }
}
