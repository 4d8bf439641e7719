#include "models/restore.h"

#include <charconv>
#include <set>

#include "engine/io/json_tensor.h"

namespace vg {
namespace {

using nlohmann::json;

// Runs f(); a vg::Error it throws comes back with `prefix` (file and section) in front.
template <class F>
auto prefixed(const std::string& prefix, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(prefix + e.what());
  }
}

void check_config(const Checkpoint& c, const ViT& model, const std::string& source) {
  const ViTConfig saved = checkpoint_config(c, source);
  if (saved == model.config()) return;
  const json have = saved.to_json(), want = model.config().to_json();
  for (const auto& [key, value] : want.items())
    check(have.at(key) == value, source, ": config entry '", key, "' is ", have.at(key).dump(),
          ", the model's is ", value.dump());
}

// Every parameter of `model` has an entry of its shape and dtype, and there is no other.
void check_weights(const nn::StateDict& saved, const ViT& model, const std::string& source,
                   const char* section) {
  std::set<std::string> names;
  for (const Parameter& p : model.named_parameters()) {
    names.insert(p.name);
    const auto it = saved.find(p.name);
    check(it != saved.end(), source, ": ", section, " entry '", p.name, "' is missing");
    const Tensor& v = it->second;
    check(v.shape() == p.tensor.shape(), source, ": ", section, " entry '", p.name, "' has shape ",
          v.shape(), ", the model's is ", p.tensor.shape());
    check(v.dtype() == p.tensor.dtype(), source, ": ", section, " entry '", p.name, "' is ",
          dtype_name(v.dtype()), ", the model's is ", dtype_name(p.tensor.dtype()));
  }
  for (const auto& [name, value] : saved)
    check(names.count(name), source, ": unexpected ", section, " entry '", name,
          "' (the model has no such parameter)");
}

int64_t read_count(const json& data, const char* key, const std::string& source) {
  check(data.contains(key), source, ": data entry '", key, "' is missing");
  const json& v = data.at(key);
  check(v.is_number_integer() && v.get<int64_t>() >= 0, source, ": data entry '", key,
        "' must be an integer >= 0, got ", v.dump());
  return v.get<int64_t>();
}

// The loader position: {"epoch": E, "cursor": C, "seed": "<decimal uint64>"} (beside the
// normalisation, "mean" and "std").
data::LoaderState read_loader_state(const Checkpoint& c, const std::string& source) {
  for (const auto& [key, value] : c.data.items())
    check(key == "epoch" || key == "cursor" || key == "seed" || key == "mean" || key == "std",
          source, ": unexpected data entry '", key, "'");
  data::LoaderState ls;
  ls.epoch = read_count(c.data, "epoch", source);
  ls.cursor = read_count(c.data, "cursor", source);
  check(c.data.contains("seed"), source, ": data entry 'seed' is missing");
  const json& seed = c.data.at("seed");
  // A string: a uint64 seed does not fit every JSON reader's numbers.
  const std::string text = seed.is_string() ? seed.get<std::string>() : std::string();
  const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), ls.seed);
  check(seed.is_string() && !text.empty() && err == std::errc() && end == text.data() + text.size(),
        source, ": data entry 'seed' must be a decimal uint64 in a string, got ", seed.dump());
  check(c.rng.contains("augment"), source, ": rng entry 'augment' is missing");
  ls.augment_rng = rng_from_json(c.rng.at("augment"), source + ": rng entry 'augment'");
  return ls;
}

std::vector<double> read_numbers(const json& data, const char* key, const std::string& source) {
  const json& v = data.at(key);
  check(v.is_array() && !v.empty(), source, ": data entry '", key,
        "' must be a non-empty list of numbers, got ", v.dump());
  std::vector<double> out;
  for (const json& x : v) {
    check(x.is_number(), source, ": data entry '", key, "' holds ", x.dump(), ", not a number");
    out.push_back(x.get<double>());
  }
  return out;
}

}  // namespace

std::optional<data::Normalisation> checkpoint_normalisation(const Checkpoint& c,
                                                            const std::string& source) {
  const bool mean = c.data.contains("mean"), std = c.data.contains("std");
  check(mean == std, source, ": data entry '", mean ? "std" : "mean", "' is missing (entry '",
        mean ? "mean" : "std", "' is there)");
  if (!mean) return std::nullopt;
  data::Normalisation n{read_numbers(c.data, "mean", source), read_numbers(c.data, "std", source)};
  check(n.mean.size() == n.std.size(), source, ": data entries 'mean' (", n.mean.size(),
        " values) and 'std' (", n.std.size(), ") differ in length");
  n.validate(static_cast<int64_t>(n.mean.size()), source + ": data entries 'mean' and 'std'");
  return n;
}

ViTConfig checkpoint_config(const Checkpoint& c, const std::string& source) {
  return prefixed(source + ": config: ", [&] { return ViTConfig::from_json(c.config); });
}

void restore_checkpoint(const Checkpoint& c, const std::string& source,
                        const RestoreTargets& into) {
  check(into.model != nullptr, "restore_checkpoint(", source, "): no model to restore into");
  ViT& model = *into.model;

  // 1. Validate every part against its target; nothing is changed yet.
  check_config(c, model, source);
  check_weights(c.model, model, source, "model");

  nn::StateDict ema_weights;
  if (into.ema) {
    check(c.extra.contains("ema") && c.extra.at("ema").is_object(), source,
          ": extra entry 'ema' is missing (the run keeps an EMA, the checkpoint has none)");
    for (const auto& [name, value] : c.extra.at("ema").items())
      ema_weights[name] = tensor_from_json(value, source + ": ema entry '" + name + "'");
    check_weights(ema_weights, into.ema->model(), source, "ema");
  }

  if (into.optimizer) {
    check(c.optimizer.is_object(), source,
          ": entry 'optimizer' is null (a weights-only checkpoint cannot be resumed)");
    prefixed(source + ": optimizer: ", [&] {
      into.optimizer->validate_state_json(c.optimizer);
      return 0;
    });
  }

  std::optional<RunSchedule> schedule;
  if (into.schedule) {
    check(c.scheduler.is_object(), source,
          ": entry 'scheduler' is null (a weights-only checkpoint cannot be resumed)");
    schedule =
        prefixed(source + ": scheduler: ", [&] { return RunSchedule::from_json(c.scheduler); });
  }

  if (into.loader || into.dropout_rng)
    for (const auto& [key, value] : c.rng.items())
      check(key == "dropout" || key == "augment", source, ": unexpected rng entry '", key, "'");
  RngState dropout;
  if (into.dropout_rng) {
    check(c.rng.contains("dropout"), source, ": rng entry 'dropout' is missing");
    dropout = rng_from_json(c.rng.at("dropout"), source + ": rng entry 'dropout'");
  }

  data::LoaderState loader_state;
  if (into.loader) {
    // The loader's position means nothing on data normalised otherwise.
    const std::optional<data::Normalisation> saved = checkpoint_normalisation(c, source);
    const data::Normalisation have = into.loader->dataset().normalisation();
    check(!saved || *saved == have, source, ": the data was normalised with ",
          saved ? data::to_string(*saved) : "", ", the loader's data set '",
          into.loader->dataset().name(), "' with ", data::to_string(have));
    loader_state = read_loader_state(c, source);
    prefixed(source + ": data: ", [&] {
      into.loader->check_state(loader_state);
      return 0;
    });
  }

  // 2. Everything fits: restore. None of these can fail on validated input.
  model.load_state_dict(c.model);
  if (into.ema) into.ema->model().load_state_dict(ema_weights);
  if (into.optimizer) into.optimizer->load_state_json(c.optimizer);
  if (into.schedule) *into.schedule = schedule;
  if (into.dropout_rng) model.dropout_rng().set_state(dropout);
  if (into.loader) into.loader->set_state(loader_state);
}

Checkpoint restore_checkpoint(const std::string& path, const RestoreTargets& into) {
  Checkpoint c = load_checkpoint(path);
  restore_checkpoint(c, path, into);
  return c;
}

Checkpoint weights_only(const Checkpoint& c, const std::string& source, bool use_ema) {
  Checkpoint w;
  w.config = c.config;
  w.step = c.step;
  // Evaluating the weights needs the pixels normalised as in training.
  for (const char* key : {"mean", "std"})
    if (c.data.contains(key)) w.data[key] = c.data.at(key);
  if (!use_ema) {
    w.model = c.model;
    return w;
  }
  check(c.extra.contains("ema") && c.extra.at("ema").is_object(), source,
        ": extra entry 'ema' is missing (the run kept no EMA; train with --ema D)");
  for (const auto& [name, value] : c.extra.at("ema").items())
    w.model[name] = tensor_from_json(value, source + ": ema entry '" + name + "'");
  return w;
}

}  // namespace vg
