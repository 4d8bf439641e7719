#include "models/trainer/run.h"

#include "engine/io/json_tensor.h"
#include "engine/optim/adamw.h"
#include "engine/optim/lamb.h"
#include "engine/optim/sgd.h"
#include "models/recipes/learnable_scaler.h"
#include "models/restore.h"
#include "models/run_data.h"

namespace vg {
namespace {

using nlohmann::json;

std::unique_ptr<optim::Optimizer> make_optimizer(const TrainOptions& o, const ViT& model) {
  auto groups = optim::param_groups_weight_decay(model.named_parameters(), o.wd);
  if (o.opt == "sgd") return std::make_unique<optim::SGD>(std::move(groups), o.momentum);
  if (o.opt == "lamb") return std::make_unique<optim::Lamb>(std::move(groups));
  return std::make_unique<optim::AdamW>(std::move(groups));
}

LossFn make_loss(const TrainOptions& o) {
  if (o.aux.any()) return recipes::loss_with_aux_losses(o.label_smoothing, o.aux);
  return cross_entropy_loss(o.label_smoothing);
}

void prepare_data(Run& run, const RunSource& from) {
  check(!from.train_set == !from.test_set,
        "build_run: give both a training and a test set, or neither");
  std::shared_ptr<const data::Dataset> train = from.train_set, test = from.test_set;
  if (!train) {
    // A resumed run normalises as it did at its start, whatever the options would compute.
    const std::optional<data::Normalisation> saved =
        from.resume ? checkpoint_normalisation(*from.resume, from.path) : std::nullopt;
    train = load_dataset(run.options, "train", saved);
    check_test_images(run.options, *train);
    test = load_dataset(run.options, "test", train->normalisation());
  }
  check_same_images(*train, *test);
  const ViTConfig& m = run.options.model;
  run.train_set = fit_data_to_model(train, m);
  run.test_set = fit_data_to_model(test, m);
  run.loader =
      std::make_unique<data::Loader>(*run.train_set, run.options.batch, true, run.options.augment,
                                     data::derive_seed(run.options.seed, 1), run.options.crop,
                                     run.options.augment_policy(m.num_classes));
  const int64_t batches = run.loader->batches_per_epoch();
  run.steps_per_epoch = std::max<int64_t>(1, (batches + run.options.accum - 1) / run.options.accum);
}

std::optional<EvalResult> read_eval(const json& j) {
  if (!j.is_object() || !j.contains("loss") || !j.contains("accuracy") || !j.contains("count"))
    return std::nullopt;
  if (!j["loss"].is_number() || !j["accuracy"].is_number() || !j["count"].is_number_integer())
    return std::nullopt;
  return EvalResult{j["loss"].get<double>(), j["accuracy"].get<double>(),
                    j["count"].get<int64_t>()};
}

}  // namespace

std::unique_ptr<Run> build_run(const TrainOptions& options, int64_t total_steps,
                               const RunSource& from) {
  auto run = std::make_unique<Run>();
  run->options = options;
  if (from.init) run->options.model = checkpoint_config(*from.init, from.path);
  run->model = std::make_unique<ViT>(run->options.model, options.seed);
  if (from.init) restore_checkpoint(*from.init, from.path, {.model = run->model.get()});
  prepare_data(*run, from);
  run->total_steps =
      total_steps > 0 ? total_steps
                      : (options.steps > 0 ? options.steps : options.epochs * run->steps_per_epoch);
  run->optimizer = make_optimizer(run->options, *run->model);
  run->loss = make_loss(run->options);
  if (options.ema > 0) run->ema = std::make_unique<ModelEma>(*run->model, options.ema);
  if (!from.resume) {
    run->schedule = RunSchedule::for_run(run->options, run->total_steps, run->steps_per_epoch);
    // A step limit stops the run early; the schedule keeps the whole run's length.
    if (options.max_steps > 0) run->total_steps = std::min(run->total_steps, options.max_steps);
    return run;
  }
  restore_checkpoint(*from.resume, from.path,
                     {.model = run->model.get(),
                      .optimizer = run->optimizer.get(),
                      .schedule = &run->schedule,
                      .loader = run->loader.get(),
                      .dropout_rng = true,
                      .ema = run->ema.get()});
  run->step = from.resume->step;
  run->saved_step = from.resume->step;
  run->saved_path = from.path;
  return run;
}

SavedRun read_saved_run(const Checkpoint& c, const std::string& path) {
  check(c.optimizer.is_object() && c.scheduler.is_object() && c.extra.contains("train"), path,
        ": a weights-only checkpoint cannot be resumed (use --init to start from it)");
  SavedRun saved;
  const ViTConfig config = checkpoint_config(c, path);
  try {
    saved.options = TrainOptions::from_json(c.extra.at("train"), config);
  } catch (const Error& e) {
    throw Error(cat_str(path, ": extra entry 'train': ", e.what()));
  }
  const json& total = c.extra.contains("total_steps") ? c.extra.at("total_steps") : json(0);
  check(total.is_number_integer() && total.get<int64_t>() >= 0, path,
        ": extra entry 'total_steps' must be an integer >= 0, got ", total.dump());
  saved.total_steps = total.get<int64_t>();
  const json& best =
      c.extra.contains("best_test_accuracy") ? c.extra.at("best_test_accuracy") : json(-1.0);
  check(best.is_number(), path, ": extra entry 'best_test_accuracy' must be a number, got ",
        best.dump());
  saved.best_accuracy = best.get<double>();
  if (c.extra.contains("last_eval")) saved.last_eval = read_eval(c.extra.at("last_eval"));
  return saved;
}

Checkpoint snapshot(const Run& run) {
  Checkpoint c;
  c.config = run.options.model.to_json();
  c.model = run.model->state_dict();
  c.optimizer = run.optimizer->state_to_json();
  c.scheduler = run.schedule->to_json();
  const data::LoaderState ls = run.loader->state();
  c.rng = {{"dropout", rng_to_json(run.model->dropout_rng().state())},
           {"augment", rng_to_json(ls.augment_rng)}};
  const data::Normalisation norm = run.train_set->normalisation();
  c.data = {{"epoch", ls.epoch},
            {"cursor", ls.cursor},
            {"seed", std::to_string(ls.seed)},
            {"mean", norm.mean},
            {"std", norm.std}};
  c.step = run.step;
  c.extra = {{"train", run.options.to_json()},
             {"total_steps", run.total_steps},
             {"best_test_accuracy", run.best_accuracy}};
  if (run.last_eval)
    c.extra["last_eval"] = {{"loss", run.last_eval->loss},
                            {"accuracy", run.last_eval->accuracy},
                            {"count", run.last_eval->count}};
  if (run.ema) {
    json ema = json::object();
    for (const auto& [name, t] : run.ema->model().state_dict()) ema[name] = tensor_to_json(t, name);
    c.extra["ema"] = std::move(ema);
  }
  return c;
}

std::string last_good(const Run& run) {
  if (run.saved_step < 0) return "no checkpoint was saved yet";
  return cat_str("the last good checkpoint is ", run.saved_path, " (step ", run.saved_step, ")");
}

}  // namespace vg
