#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "engine/checkpoint.h"
#include "engine/rng.h"

using namespace vg;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  fs::path dir = fs::temp_directory_path() / ("vg_ckpt_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

Checkpoint sample() {
  Rng rng(5);
  Checkpoint c;
  c.config = {{"embed_dim", 4}};
  c.model["blocks.0.ls1.gamma"] = randn({4}, rng);
  c.model["head.weight"] = randn({3, 4}, rng);
  c.optimizer = {{"name", "adamw"}};
  c.scheduler = {{"kind", "constant"}};
  c.data = {{"epoch", 1}, {"cursor", 7}};
  c.step = 12;
  return c;
}

std::string with(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("a checkpoint round-trips float32 values to the same bits") {
  const fs::path path = temp_dir() / "a.json";
  Checkpoint c = sample();
  save_checkpoint(path.string(), c);
  Checkpoint back = load_checkpoint(path.string());
  REQUIRE(back.model.size() == 2);
  for (const auto& [name, t] : c.model) {
    const Tensor& u = back.model.at(name);
    CHECK(u.shape() == t.shape());
    CHECK(std::memcmp(u.raw_data(), t.raw_data(), t.numel() * 4) == 0);
  }
  CHECK(back.step == 12);
  CHECK(back.data["cursor"] == 7);
  CHECK(back.optimizer["name"] == "adamw");
}

TEST_CASE("saving replaces the file atomically and leaves no temporary behind") {
  const fs::path dir = temp_dir() / "atomic";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path path = dir / "last.json";
  save_checkpoint(path.string(), sample());
  Checkpoint second = sample();
  second.step = 99;
  save_checkpoint(path.string(), second);
  CHECK(load_checkpoint(path.string()).step == 99);
  int files = 0;
  for (auto& entry : fs::directory_iterator(dir)) files += entry.is_regular_file();
  CHECK(files == 1);
  CHECK_THROWS_WITH_AS(save_checkpoint((dir / "missing" / "x.json").string(), second),
                       doctest::Contains("cannot write"), Error);
}

TEST_CASE("malformed checkpoints are errors that name the file and the entry") {
  const std::string good = checkpoint_to_string(sample());
  const std::string src = "ck.json";
  auto fails_with = [&](const std::string& text, const std::string& message) {
    INFO("expected: ", message);
    CHECK_THROWS_WITH_AS(parse_checkpoint(text, src), doctest::Contains(message.c_str()), Error);
  };
  fails_with(good.substr(0, good.size() / 2), "ck.json: not a valid JSON document");
  fails_with("[1, 2]", "not a checkpoint");
  fails_with(with(good, "vitgrad-checkpoint", "other-format"), "format is");
  fails_with(with(good, "\"version\":1", "\"version\":7"), "version 7 is not supported");
  fails_with(with(good, "\"step\":12", "\"step\":-1"), "'step' is not a non-negative");
  fails_with(with(good, "\"step\":12", "\"step\":12,\"bogus\":1"), "unexpected entry 'bogus'");
  fails_with(with(good, "\"optimizer\":", "\"optimiser\":"), "unexpected entry 'optimiser'");
  fails_with(with(good, "\"shape\":[4]", "\"shape\":[5]"), "blocks.0.ls1.gamma");
  fails_with(with(good, "\"dtype\":\"float32\"", "\"dtype\":\"int8\""), "model entry");
  fails_with(with(good, "\"data\":{\"cursor\":7,\"epoch\":1}", "\"data\":[1]"), "'data' is not an object");
  const size_t first_value = good.find("\"data\":[", good.find("blocks.0.ls1.gamma")) + 8;
  fails_with(good.substr(0, first_value) + "\"x\"," + good.substr(first_value), "blocks.0.ls1.gamma");
  CHECK_THROWS_WITH_AS(load_checkpoint("/nonexistent/dir/ck.json"),
                       doctest::Contains("/nonexistent/dir/ck.json: cannot open"), Error);
}
