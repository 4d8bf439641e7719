// `vitgrad gradcheck`: the float64 gradient check of every op and layer, as a table or as
// JSON lines; exit code 1 when any check fails.
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "models/gradcheck_suite.h"
#include "tools/args.h"

namespace vg::tools {
namespace {

// The cases whose name or family is `only` (all when empty); an unknown name is misuse.
std::vector<GradcheckCase> select_cases(const ArgParser& args) {
  std::vector<GradcheckCase> all = gradcheck_cases();
  if (!args.has("--only")) return all;
  const std::string only = args.text("--only");
  std::vector<GradcheckCase> chosen;
  for (GradcheckCase& c : all)
    if (c.name == only || gradcheck_family(c.name) == only) chosen.push_back(std::move(c));
  if (chosen.empty()) {
    std::string known;
    std::set<std::string> families;
    for (const GradcheckCase& c : all) {
      // Appended piece by piece: GCC 12 flags `" " + string` with a false -Wrestrict.
      if (families.insert(gradcheck_family(c.name)).second)
        known.append(" ").append(gradcheck_family(c.name));
      if (c.name != gradcheck_family(c.name)) known.append(" ").append(c.name);
    }
    args.fail("unknown check '" + only + "'; known:" + known);
  }
  return chosen;
}

}  // namespace

int run_gradcheck(const std::vector<std::string>& argv) {
  ArgParser args("gradcheck", "vitgrad gradcheck [--only NAME] [--rtol X] [--json]",
                 {{"--only", "NAME", "one check (\"add:row\") or a family of them (\"add\")"},
                  {"--rtol", "X",
                   "pass when the max relative error is at most X, instead of each check's "
                   "own bound"},
                  {"--json", "",
                   "one JSON object per line: name, max_abs_err, max_rel_err, "
                   "passed"}});
  args.parse(argv);
  if (args.help_requested()) {
    std::cout << args.help()
              << "Compares backward() with central differences in float64 for every op of the "
                 "engine and every layer;\nexit code 1 when any check fails.\n";
    return 0;
  }
  const std::vector<GradcheckCase> cases = select_cases(args);
  const bool json = args.on("--json");
  const bool own_bound = args.has("--rtol");
  const double rtol = args.number("--rtol", 0, 0, 1e300);
  size_t width = 4;
  for (const GradcheckCase& c : cases) width = std::max(width, c.name.size());
  if (!json)
    std::cout << std::left << std::setw(int(width)) << "name"
              << "  " << std::right << std::setw(11) << "max_abs_err"
              << "  " << std::setw(11) << "max_rel_err"
              << "  result\n";
  int failed = 0;
  for (const GradcheckCase& c : cases) {
    GradcheckResult r = c.run();
    if (own_bound) r.passed = r.max_rel_err <= rtol;
    failed += !r.passed;
    if (json) {
      std::cout << nlohmann::ordered_json{{"name", c.name},
                                          {"max_abs_err", r.max_abs_err},
                                          {"max_rel_err", r.max_rel_err},
                                          {"passed", r.passed}}
                       .dump()
                << std::endl;
      continue;
    }
    std::cout << std::left << std::setw(int(width)) << c.name << "  " << std::right
              << std::scientific << std::setprecision(2) << std::setw(11) << r.max_abs_err << "  "
              << std::setw(11) << r.max_rel_err << "  " << (r.passed ? "ok" : "FAILED")
              << std::endl;
  }
  if (!json) std::cout << cases.size() - failed << " passed, " << failed << " failed\n";
  return failed ? 1 : 0;
}

}  // namespace vg::tools
