#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "engine/ops/ops.h"
#include "models/trainer/observers.h"

namespace vg {
namespace {

using nlohmann::json;

// Per-block mean |gamma| of every LayerScale and GRN, for the metrics and the plots.
json gamma_magnitudes(ViT& model, bool grn) {
  json out = json::object();
  for (const Parameter& p : model.named_parameters()) {
    const bool is_ls = p.name.find(".ls") != std::string::npos && p.name.ends_with(".gamma");
    const bool is_grn = p.name.find(".grn.gamma") != std::string::npos;
    if ((grn && !is_grn) || (!grn && !is_ls)) continue;
    out[p.name.substr(0, p.name.size() - 6)] = mean(abs(p.tensor.detach())).item();
  }
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

void MetricsLog::on_start(Run& run) {
  path_ = (std::filesystem::path(run.out_dir) / "metrics.jsonl").string();
  out_.open(path_, std::ios::app);
  check(out_.good(), path_, ": cannot write");
  std::error_code ec;
  whole_size_ = std::filesystem::exists(path_) ? std::filesystem::file_size(path_, ec) : 0;
  start_ = std::chrono::steady_clock::now();
}

void MetricsLog::write(const Run& run, const nlohmann::json& record) {
  const std::string line = record.dump() + "\n";
  errno = 0;
  out_ << line << std::flush;
  if (out_.good()) {
    whole_size_ += line.size();
    return;
  }
  // A full disk: cut the line it left half-written, so every line still parses, and stop.
  const std::string reason = errno ? std::strerror(errno) : "write failed";
  out_.close();
  ::truncate(path_.c_str(), static_cast<off_t>(whole_size_));
  throw Error(
      cat_str(path_, ": cannot write (", reason, ") at step ", run.step, "; ", last_good(run)));
}

void MetricsLog::on_step(Run& run, StepReport& r) {
  window_.add(r);
  window_seconds_ += r.seconds;
  if (r.step % run.options.log_every == 0 || r.step == run.total_steps) {
    json record = {{"kind", "step"},
                   {"step", r.step},
                   {"epoch", r.epoch},
                   {"loss", window_.mean_loss()},
                   {"accuracy", window_.accuracy()},
                   {"lr", r.lr},
                   {"grad_norm", r.grad_norm},
                   {"images_per_s", window_seconds_ > 0 ? window_.count / window_seconds_ : 0}};
    if (run.model->config().layerscale.enabled() || run.model->block(0).has_layerscale())
      record["layerscale"] = gamma_magnitudes(*run.model, false);
    if (run.model->config().grn) record["grn"] = gamma_magnitudes(*run.model, true);
    if (run.options.aux.any()) record["aux_loss"] = r.aux_loss;  // of the last step
    write(run, record);
    window_ = Tally{};
    window_seconds_ = 0;
  }
  if (const auto& e = r.epoch_report) {
    json record = {{"kind", "epoch"},
                   {"step", r.step},
                   {"epoch", e->epoch},
                   {"train_loss", e->train_loss},
                   {"train_accuracy", e->train_accuracy},
                   {"test_loss", e->test.loss},
                   {"test_accuracy", e->test.accuracy},
                   {"lr", r.lr},
                   {"seconds", seconds_since(start_)}};
    if (e->ema_accuracy) record["ema_test_accuracy"] = *e->ema_accuracy;
    write(run, record);
  }
}

}  // namespace vg
