#include "models/vit_config.h"

#include <doctest/doctest.h>

#include "engine/core/error.h"

using namespace vg;
using nlohmann::json;

TEST_CASE("ViTConfig round-trips through JSON, every field included") {
  ViTConfig c;
  c.img_size = 32;
  c.patch_size = 8;
  c.in_chans = 3;
  c.num_classes = 100;
  c.embed_dim = 96;
  c.depth = 7;
  c.num_heads = 3;
  c.mlp_ratio = 3.5;
  c.qkv_bias = false;
  c.norm = NormKind::learnable_scaler;
  c.layerscale = LayerScaleSetting::fixed(1e-4);
  c.grn = true;
  c.global_pool = GlobalPool::avg;
  c.drop_path_rate = 0.15;
  c.dropout = 0.05;
  c.stem = {8, 16};  // 32 -> 16 -> 8: one patch of 8
  c.stem_norm = nn::StemNorm::layernorm;
  const json j = c.to_json();
  CHECK(j.size() == 17);
  CHECK(j.at("stem_norm") == "layernorm");
  CHECK(j.at("layerscale") == "1e-4");
  CHECK(j.at("stem") == "conv:8,16");
  CHECK(j.at("norm") == "learnable_scaler");
  CHECK(ViTConfig::from_json(j) == c);
  CHECK(ViTConfig::from_json(json::parse(j.dump())) == c);  // through text as well
  for (const std::string& name : preset_names())
    CHECK_MESSAGE(ViTConfig::from_json(preset(name).to_json()) == preset(name), name);
}

TEST_CASE("ViTConfig fills missing keys with the defaults and reads a numeric layerscale") {
  CHECK(ViTConfig::from_json(json::object()) == ViTConfig{});
  const ViTConfig c = ViTConfig::from_json({{"depth", 3}, {"layerscale", 0.0001}});
  CHECK(c.depth == 3);
  CHECK(c.layerscale_init() == 1e-4);
  CHECK(ViTConfig::from_json({{"layerscale", "none"}}).layerscale_init() == 0);
}

TEST_CASE("The choices are parsed once into enums and written back in the same spellings") {
  for (const char* text : {"none", "auto", "1e-4", "0.1", "1e-5", "2.5", "10"})
    CHECK(LayerScaleSetting::parse(text).str() == text);
  // Older checkpoints wrote the number in another form; it reads as the same value.
  CHECK(LayerScaleSetting::parse("0.0001") == LayerScaleSetting::fixed(1e-4));
  CHECK(LayerScaleSetting::parse("1e-05") == LayerScaleSetting::fixed(1e-5));
  CHECK(LayerScaleSetting::parse("auto").mode == LayerScaleSetting::Mode::by_depth);
  CHECK(parse_norm("learnable_scaler") == NormKind::learnable_scaler);
  CHECK(to_string(parse_norm("layernorm")) == "layernorm");
  CHECK(parse_global_pool("avg") == GlobalPool::avg);
  CHECK(to_string(GlobalPool::token) == "token");
  const ViTConfig old = ViTConfig::from_json({{"layerscale", "0.0001"}, {"norm", "layernorm"}});
  CHECK(old.layerscale_init() == 1e-4);
  CHECK(old.to_json().at("layerscale") == "1e-4");
  CHECK_THROWS_WITH_AS(ViTConfig::from_json({{"norm", "batchnorm"}}),
                       "ViTConfig: 'norm' must be layernorm or learnable_scaler, got 'batchnorm'",
                       Error);
  CHECK_THROWS_WITH_AS(LayerScaleSetting::parse("1e-4x"),
                       "ViTConfig: 'layerscale' must be none, auto or a positive number, got "
                       "'1e-4x'",
                       Error);
  ViTConfig bad;
  bad.layerscale = LayerScaleSetting::fixed(-1);
  CHECK_THROWS_WITH_AS(bad.validate(),
                       "ViTConfig: 'layerscale' must be none, auto or a positive number, got '-1'",
                       Error);
}

TEST_CASE("LayerScale 'auto' follows the CaiT rule: <= 18 -> 0.1, <= 24 -> 1e-5, deeper 1e-6") {
  ViTConfig c;
  c.layerscale = LayerScaleSetting::by_depth();
  const std::vector<std::pair<int64_t, double>> expected{
      {1, 0.1}, {12, 0.1}, {18, 0.1}, {19, 1e-5}, {24, 1e-5}, {25, 1e-6}, {36, 1e-6}, {48, 1e-6}};
  for (const auto& [depth, init] : expected) {
    c.depth = depth;
    CHECK_MESSAGE(c.layerscale_init() == init, "depth ", depth);
  }
}

TEST_CASE("ViTConfig validation names the field and the value") {
  auto error_of = [](const json& j) {
    try {
      ViTConfig::from_json(j);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error_of({{"embed_dim", 30}, {"num_heads", 4}}) ==
        "ViTConfig: embed_dim 30 is not divisible by num_heads 4");
  CHECK(error_of({{"img_size", 28}, {"patch_size", 5}}) ==
        "ViTConfig: img_size 28 is not divisible by patch_size 5");
  CHECK(error_of({{"depth", 0}}) == "ViTConfig: 'depth' must be positive, got 0");
  CHECK(error_of({{"depth", 2.5}}) == "ViTConfig: 'depth' must be an integer, got 2.5");
  CHECK(error_of({{"qkv_bias", "yes"}}) ==
        "ViTConfig: 'qkv_bias' must be true or false, got \"yes\"");
  CHECK(error_of({{"norm", "batchnorm"}}) ==
        "ViTConfig: 'norm' must be layernorm or learnable_scaler, got 'batchnorm'");
  CHECK(error_of({{"layerscale", "big"}}) ==
        "ViTConfig: 'layerscale' must be none, auto or a positive number, got 'big'");
  CHECK(error_of({{"layerscale", -1}}) ==
        "ViTConfig: 'layerscale' must be none, auto or a positive number, got '-1.0'");
  CHECK(error_of({{"global_pool", "max"}}) ==
        "ViTConfig: 'global_pool' must be token or avg, got 'max'");
  CHECK(error_of({{"drop_path_rate", 1.0}}) ==
        "ViTConfig: 'drop_path_rate' must be in [0, 1), got 1");
  CHECK(error_of({{"dropout", -0.1}}) == "ViTConfig: 'dropout' must be in [0, 1), got -0.1");
  CHECK(error_of({{"mlp_ratio", 0}}) == "ViTConfig: 'mlp_ratio' must be positive, got 0");
  // Found by the config fuzzer: in_chans * patch_size^2 overflowed int64 before the size check.
  CHECK(error_of({{"in_chans", 2333333333333333333}, {"patch_size", 2}}) ==
        "ViTConfig: 'in_chans' must be at most 65536, got 2333333333333333333");
  CHECK(error_of({{"depht", 3}}) == "ViTConfig: unknown key 'depht'");
  CHECK(error_of(json::array()) == "ViTConfig: expected a JSON object, got array");
}

TEST_CASE("presets: fmnist-tiny is the small default, a deep preset has depth >= 24") {
  const std::vector<std::string> names = preset_names();
  REQUIRE(names.size() >= 2);
  CHECK(names[0] == "fmnist-tiny");
  const ViTConfig tiny = preset("fmnist-tiny");
  CHECK(tiny.img_size == 28);
  CHECK(tiny.in_chans == 1);
  CHECK(tiny.num_classes == 10);
  CHECK(tiny.layerscale == LayerScaleSetting::none());
  bool has_deep = false;
  for (const std::string& name : names) {
    const ViTConfig c = preset(name);
    CHECK_NOTHROW(c.validate());
    CHECK(!preset_description(name).empty());
    has_deep = has_deep || c.depth >= 24;
  }
  CHECK(has_deep);
  CHECK(preset("fmnist-deep").depth == 24);
  CHECK(preset("fmnist-deep").layerscale_init() == 1e-5);
  CHECK(preset("fmnist-ls36").norm == NormKind::learnable_scaler);
  CHECK_THROWS_WITH_AS(preset("imagenet"),
                       doctest::Contains("unknown preset 'imagenet' (known: fmnist-tiny"), Error);
}

TEST_CASE("The stem is written none or conv:C1,C2,... (s1: stride 1); a config without it has none") {
  CHECK(ViTConfig{}.stem.empty());
  CHECK(ViTConfig{}.to_json().at("stem") == "none");
  CHECK(ViTConfig::from_json({{"depth", 2}}).stem.empty());  // a checkpoint older than stems
  for (const char* text :
       {"none", "conv:32", "conv:32,64", "conv:8,16,32,64", "conv:32s1,64", "conv:8,8s1,16s1"})
    CHECK(stem_str(parse_stem(text)) == text);
  using nn::StemStage;
  CHECK(parse_stem("conv:32,64") == std::vector<StemStage>{StemStage(32, 2), StemStage(64, 2)});
  CHECK(parse_stem("conv:32s1,64") == std::vector<StemStage>{StemStage(32, 1), StemStage(64, 2)});
  const ViTConfig c = ViTConfig::from_json({{"stem", "conv:32s1,64"}, {"patch_size", 1}});
  CHECK(c.stem == std::vector<StemStage>{StemStage(32, 1), StemStage(64)});
  CHECK(c.to_json().at("stem") == "conv:32s1,64");
  for (const char* bad : {"conv", "conv:", "conv:32,", "conv:,32", "conv:0", "conv:-4", "conv:3x",
                          "conv:32;64", "conv:5000", "conv:1,1,1,1,1,1,1,1,1", "32,64", "CONV:8",
                          "conv:s1", "conv:32s2", "conv:32s", "conv:32S1", "conv:0s1", "conv:32s1s1"}) {
    INFO(bad);
    CHECK_THROWS_WITH_AS(parse_stem(bad),
                         (std::string("ViTConfig: 'stem' must be none or conv:C1,C2,... with 1 "
                                      "to 8 channel counts in [1, 4096], each with s1 after it "
                                      "for stride 1, got '") +
                          bad + "'")
                             .c_str(),
                         Error);
  }
  CHECK_THROWS_WITH_AS(ViTConfig::from_json({{"stem", json::array({32, 64})}}),
                       "ViTConfig: 'stem' must be a string, got [32,64]", Error);
}

TEST_CASE("The stem's norm is written none or layernorm; a config without it has none") {
  CHECK(ViTConfig{}.stem_norm == nn::StemNorm::none);
  CHECK(ViTConfig{}.to_json().at("stem_norm") == "none");
  CHECK(ViTConfig::from_json({{"stem", "conv:8,16"}, {"patch_size", 7}}).stem_norm ==
        nn::StemNorm::none);
  const ViTConfig c = ViTConfig::from_json(
      {{"stem", "conv:32s1,64"}, {"stem_norm", "layernorm"}, {"patch_size", 1}});
  CHECK(c.stem_norm == nn::StemNorm::layernorm);
  CHECK(ViTConfig::from_json(c.to_json()) == c);
  CHECK(c.to_json().at("stem_norm") == "layernorm");
  CHECK_THROWS_WITH_AS(
      ViTConfig::from_json({{"stem", "conv:8,16"}, {"patch_size", 7}, {"stem_norm", "batchnorm"}}),
      "ViTConfig: 'stem_norm' must be none or layernorm, got 'batchnorm'", Error);
  CHECK_THROWS_WITH_AS(ViTConfig::from_json({{"stem_norm", "layernorm"}}),
                       "ViTConfig: 'stem_norm' is layernorm but there is no stem", Error);
  CHECK_THROWS_WITH_AS(
      ViTConfig::from_json({{"stem", "conv:8,16"}, {"patch_size", 7}, {"stem_norm", true}}),
      "ViTConfig: 'stem_norm' must be a string, got true", Error);
}

TEST_CASE("With a stem the patches are cut from its output: 28 -> 14 -> 7, 49 tokens at patch 1") {
  ViTConfig c;
  c.stem = {32, 64};
  c.patch_size = 1;
  CHECK(c.feature_size() == 7);
  CHECK(c.feature_chans() == 64);
  CHECK(c.num_patches() == 49);
  c.stem = {16, 32, 64};
  CHECK(c.feature_size() == 4);  // 7 -> 4: odd sides round up
  CHECK(c.num_patches() == 16);
  c.patch_size = 2;
  CHECK(c.num_patches() == 4);
  CHECK_NOTHROW(c.validate());
  c.patch_size = 4;  // the default: 7 is not divisible by 4
  c.stem = {32, 64};
  CHECK_THROWS_WITH_AS(c.validate(),
                       "ViTConfig: the stem's 7x7 output (img_size 28, 2 stages) is not divisible "
                       "by patch_size 4",
                       Error);
  c.stem = {32, 0};
  c.patch_size = 1;
  CHECK_THROWS_WITH_AS(c.validate(),
                       "ViTConfig: 'stem' channels must be in [1, 4096], got conv:32,0", Error);
  c.stem = {nn::StemStage(32, 3)};
  CHECK_THROWS_WITH_AS(c.validate(),
                       "ViTConfig: a 'stem' stage's stride must be 1 or 2, got conv:32s3", Error);
}

TEST_CASE("A stride-1 stem stage keeps the side: 28 -> 28 -> 14 -> 7, 49 tokens at patch 1") {
  ViTConfig c;
  c.stem = {nn::StemStage(32, 1), 32, nn::StemStage(64, 1), 64};
  c.patch_size = 1;
  CHECK(c.feature_size() == 7);
  CHECK(c.feature_chans() == 64);
  CHECK(c.num_patches() == 49);
  CHECK_NOTHROW(c.validate());
  c.patch_size = 7;
  c.stem = {nn::StemStage(8, 1)};  // 28 -> 28: 16 patches of 7x7 from 8 channels
  CHECK(c.num_patches() == 16);
  CHECK_NOTHROW(c.validate());
}
