#include "engine/io/checkpoint.h"

#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "engine/core/rng.h"
#include "tests/scratch_dir.h"

using namespace vg;
namespace fs = std::filesystem;

namespace {

Checkpoint sample() {
  Rng rng(5);
  Checkpoint c;
  c.config = {{"embed_dim", 4}};
  c.model["blocks.0.ls1.gamma"] = randn({4}, rng);
  c.model["head.weight"] = randn({3, 4}, rng);
  // Awkward float32 values: signed zero, the smallest denormal, the largest finite float,
  // the smallest normal, and values whose shortest exact decimal needs 9 digits.
  c.model["awkward"] = from_vector(
      std::vector<float>{-0.0f, std::numeric_limits<float>::denorm_min(),
                         -std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
                         std::bit_cast<float>(0x3f800001u) /* 1.00000012 */, 0.1f, 16777215.0f,
                         -3.33333325e-5f},
      {8});
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
  const fs::path path = vg::testing::scratch_dir("ckpt_test") / "a.json";
  Checkpoint c = sample();
  save_checkpoint(path.string(), c);
  Checkpoint back = load_checkpoint(path.string());
  REQUIRE(back.model.size() == 3);
  for (const auto& [name, t] : c.model) {
    const Tensor& u = back.model.at(name);
    CHECK(u.shape() == t.shape());
    CHECK(std::memcmp(u.raw_data(), t.raw_data(), t.numel() * 4) == 0);
  }
  CHECK(std::signbit(back.model.at("awkward").data<float>()[0]));
  CHECK(back.step == 12);
  CHECK(back.data["cursor"] == 7);
  CHECK(back.optimizer["name"] == "adamw");
}

TEST_CASE("saving replaces the file atomically and leaves no temporary behind") {
  const fs::path dir = vg::testing::scratch_dir("ckpt_test") / "atomic";
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
  // Numbers beyond double's range: nlohmann reports them as out_of_range, not parse_error
  // (the first found by fuzzing, the second inside an otherwise good checkpoint).
  fails_with("8E18888888888z0}",
             "ck.json: not a valid JSON document (number overflow parsing '8E18888888888')");
  fails_with(with(good, "\"step\":12", "\"step\":1e400"), "number overflow parsing '1e400'");
  fails_with(with(good, "vitgrad-checkpoint", "other-format"), "format is");
  fails_with(with(good, "\"version\":2", "\"version\":7"), "version 7 is not supported");
  fails_with(with(good, "\"step\":12", "\"step\":-1"), "'step' is not a non-negative");
  fails_with(with(good, "\"step\":12", "\"step\":12,\"bogus\":1"), "unexpected entry 'bogus'");
  fails_with(with(good, "\"optimizer\":", "\"optimiser\":"), "unexpected entry 'optimiser'");
  fails_with(with(good, "\"shape\":[4]", "\"shape\":[5]"), "blocks.0.ls1.gamma");
  fails_with(with(good, "\"dtype\":\"float32\"", "\"dtype\":\"int8\""), "model entry");
  fails_with(with(good, "\"data\":{\"cursor\":7,\"epoch\":1}", "\"data\":[1]"),
             "'data' is not an object");
  const size_t first_value = good.find("\"data\":[", good.find("blocks.0.ls1.gamma")) + 8;
  fails_with(good.substr(0, first_value) + "\"x\"," + good.substr(first_value),
             "blocks.0.ls1.gamma");
  CHECK_THROWS_WITH_AS(load_checkpoint("/nonexistent/dir/ck.json"),
                       doctest::Contains("/nonexistent/dir/ck.json: cannot open"), Error);
}

TEST_CASE("a save that fails mid-write leaves the previous checkpoint intact") {
  const fs::path dir = vg::testing::scratch_dir("ckpt_test") / "crash";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path path = dir / "last.json";
  save_checkpoint(path.string(), sample());
  std::ifstream in(path, std::ios::binary);
  const std::string before((std::istreambuf_iterator<char>(in)), {});
  Checkpoint bigger = sample();
  bigger.model["blocks.1.mlp.fc1.weight"] = zeros({256, 256});  // ~400 kB of text
  bigger.step = 99;

  // A child process whose files may not grow past 4 kB: the write fails part-way, as on a
  // full disk. (A child, so that the limit does not outlive the test.)
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);  // get EFBIG from write() instead of being killed
    const rlimit limit{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    int code = 3;  // the save succeeded: wrong
    try {
      save_checkpoint(path.string(), bigger);
    } catch (const Error& e) {
      code = std::string(e.what()).find(path.string() + ": write failed") == 0 ? 0 : 4;
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // a vg::Error naming the file

  std::ifstream after_in(path, std::ios::binary);
  const std::string after((std::istreambuf_iterator<char>(after_in)), {});
  CHECK(after == before);  // the previous checkpoint, byte for byte
  CHECK(load_checkpoint(path.string()).step == 12);
  int files = 0;
  for (auto& entry : fs::directory_iterator(dir)) files += entry.is_regular_file();
  CHECK(files == 1);  // the partial temporary file was removed
  fs::remove_all(dir);
}
