#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "tests/tools/cli_helpers.h"
#include "tests/tools/xml_check.h"

using vg::testing::read_text;
using vg::testing::scratch_dir;
using vg::testing::vitgrad;
using vg::testing::xml_problem;

namespace {

namespace fs = std::filesystem;

// The cells of the report's table rows (header and separator left out).
std::vector<std::vector<std::string>> table_rows(const std::string& md) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(md);
  bool header = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| variant |", 0) == 0) {
      header = true;
      continue;
    }
    if (!header || line.rfind("|---", 0) == 0) continue;
    if (line.empty() || line[0] != '|') break;
    std::vector<std::string> cells;
    std::istringstream cols(line.substr(1));
    for (std::string c; std::getline(cols, c, '|');) cells.push_back(c.substr(1, c.size() - 2));
    rows.push_back(cells);
  }
  return rows;
}

double percent_cell(const std::string& cell) {
  REQUIRE(!cell.empty());
  REQUIRE(cell.back() == '%');
  return std::stod(cell.substr(0, cell.size() - 1));
}

const std::string kSmall = "--data synthetic --synthetic-size 200 --dim 16 --heads 2 --threads 1 ";

}  // namespace

TEST_CASE("ablate trains four variants and writes a report with a table and plots") {
  const fs::path dir = scratch_dir("ablate");
  const auto r =
      vitgrad("ablate " + kSmall + "--depth 3 --steps 4 --log-every 1 --out " + dir.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string md = read_text(dir / "report.md");
  const auto rows = table_rows(md);
  REQUIRE(rows.size() == 4);
  const std::vector<std::string> names = {"layernorm", "layernorm+layerscale", "learnable_scaler",
                                          "learnable_scaler+grn"};
  std::vector<long> params;
  for (size_t i = 0; i < rows.size(); ++i) {
    REQUIRE(rows[i].size() == 9);
    CHECK(rows[i][0] == names[i]);
    params.push_back(std::stol(rows[i][4]));
    const double final_acc = percent_cell(rows[i][5]), best = percent_cell(rows[i][6]);
    CHECK(final_acc >= 0);
    CHECK(best >= final_acc);
    CHECK(best <= 100);
    CHECK(rows[i][7].find('m') != std::string::npos);  // "0m01s"
    CHECK(rows[i][8] == "no");
  }
  CHECK(rows[1][2] == "auto (0.1)");  // CaiT's value for depth <= 18
  // LayerScale adds 2 x dim per block, GRN 2 x hidden per block, LearnableScaler as LayerNorm.
  CHECK(params[1] - params[0] == 2 * 16 * 3);
  CHECK(params[2] == params[0]);
  CHECK(params[3] - params[2] == 2 * 32 * 3);
  for (const char* plot : {"loss", "accuracy", "layerscale", "grn"}) {
    const std::string svg = read_text(dir / (std::string(plot) + ".svg"));
    INFO(plot);
    REQUIRE(svg.rfind("<svg", 0) == 0);
    CHECK(xml_problem(svg) == "");
    CHECK(md.find(std::string("](") + plot + ".svg)") != std::string::npos);
  }
  // One LayerScale line per gamma (ls1 and ls2 of each of the 3 blocks), one run.
  const std::string ls = read_text(dir / "layerscale.svg");
  size_t lines = 0;
  for (size_t at = ls.find("<polyline"); at != std::string::npos; at = ls.find("<polyline", at + 1))
    ++lines;
  CHECK(lines == 6);
  for (const std::string& n : names) CHECK(fs::exists(dir / n / "metrics.jsonl"));
}

TEST_CASE("ablate's report names the recipe's augmentations") {
  const fs::path dir = scratch_dir("ablate-augment");
  const auto r = vitgrad("ablate " + kSmall +
                         "--depth 2 --steps 2 --aa rand-m7-mstd0.5 --mixup 0.1 --cutmix 1 --out " +
                         dir.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string md = read_text(dir / "report.md");
  CHECK(md.find("augmentation random crop and flip, RandAugment rand-m7-mstd0.5, mixup 0.1, "
                "cutmix 1") != std::string::npos);
}

TEST_CASE("ablate reports a variant whose loss turns non-finite as diverged") {
  const fs::path dir = scratch_dir("ablate_diverge");
  const auto r = vitgrad(
      "ablate " + kSmall +
      "--depth 6 --steps 8 --opt sgd --lr 100 --clip 0 --wd 0 --no-augment --out " + dir.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string md = read_text(dir / "report.md");
  const auto rows = table_rows(md);
  REQUIRE(rows.size() == 4);
  for (const auto& row : rows) CHECK(row[8] == "yes");
  CHECK(md.find("layernorm diverged:") != std::string::npos);
}

TEST_CASE("ablate misuse is one line on stderr and exit code 2") {
  for (const std::string args : {"--depth 3", "--out x --norm layernorm", "--out x --grn",
                                 "--out x --steps 2 --epochs 2", "--out x --depth 0"}) {
    const auto r = vitgrad("ablate " + args);
    INFO(args, ": ", r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("vitgrad ablate: ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  const auto help = vitgrad("ablate --help");
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("--out DIR") != std::string::npos);
  CHECK(help.out.find("diverged") != std::string::npos);
  // The flag's line gives ablate's own default, not train's.
  CHECK(help.out.find("per variant (default 4)") != std::string::npos);
  CHECK(help.out.find("(default 10)") == std::string::npos);
}
