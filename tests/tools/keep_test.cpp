// --keep: which checkpoint files a run writes (last.json, best.json, step-<N>.json).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/tools/cli_helpers.h"

using vg::testing::read_text;
using vg::testing::scratch_dir;
using vg::testing::vitgrad;
namespace fs = std::filesystem;

namespace {

const std::string kTinyRun =
    "train --data synthetic --synthetic-size 40 --depth 1 --dim 8 --heads 2 --patch 14 "
    "--batch 10 --threads 1 ";

std::set<std::string> checkpoints_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".json" && entry.path().filename() != "config.json")
      names.insert(entry.path().filename().string());
  return names;
}

}  // namespace

TEST_CASE("--keep chooses the checkpoint files a run writes, and a resumed run keeps to it") {
  const fs::path dir = scratch_dir("keep");
  auto r = vitgrad(kTinyRun + "--steps 6 --save-every 2 --keep last,steps --out " +
                   (dir / "steps").string());
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(checkpoints_in(dir / "steps") ==
        std::set<std::string>{"last.json", "step-2.json", "step-4.json", "step-6.json"});
  const auto config = nlohmann::json::parse(read_text(dir / "steps" / "config.json"));
  CHECK(config["train"]["keep"] == "last,steps");
  // The last step file and last.json are the same snapshot.
  CHECK(read_text(dir / "steps" / "step-6.json") == read_text(dir / "steps" / "last.json"));

  // Resumed from an intermediate file into a new folder: the later files, the same bits.
  r = vitgrad("train --resume " + (dir / "steps" / "step-4.json").string() + " --out " +
              (dir / "resumed").string());
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(read_text(dir / "resumed" / "step-6.json") == read_text(dir / "steps" / "step-6.json"));

  r = vitgrad(kTinyRun + "--steps 2 --keep best --out " + (dir / "best").string());
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(checkpoints_in(dir / "best") == std::set<std::string>{"best.json"});

  r = vitgrad(kTinyRun + "--steps 2 --out " + (dir / "default").string());
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(checkpoints_in(dir / "default") == std::set<std::string>{"best.json", "last.json"});

  for (const auto& [keep, message] :
       {std::pair<std::string, std::string>{"last,lats", "'lats' is not one of last, best, steps"},
        {"best,best", "names 'best' twice"},
        {"", "'' is not one of"}}) {
    r = vitgrad(kTinyRun + "--steps 1 --keep '" + keep + "' --out " + (dir / "bad").string());
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(r.err.find(message) != std::string::npos, r.err);
    CHECK(!fs::exists(dir / "bad"));
  }
}
