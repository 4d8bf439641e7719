#include <iomanip>
#include <ostream>
#include <sstream>

#include "models/trainer/observers.h"

namespace vg {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::string format_duration(double s) {
  std::ostringstream out;
  const int64_t t = static_cast<int64_t>(s + 0.5);
  if (t >= 3600)
    out << t / 3600 << "h" << std::setw(2) << std::setfill('0') << (t % 3600) / 60 << "m";
  else
    out << t / 60 << "m" << std::setw(2) << std::setfill('0') << t % 60 << "s";
  return out.str();
}

}  // namespace

void ProgressLine::on_start(Run& run) {
  first_step_ = run.step;
  start_ = last_line_ = std::chrono::steady_clock::now();
}

void ProgressLine::on_step(Run& run, StepReport& r) {
  window_.add(r);
  window_seconds_ += r.seconds;
  const bool due =
      tty_ ? seconds_since(last_line_) >= refresh_seconds_ : r.step % run.options.log_every == 0;
  if (due || r.step == run.total_steps) print_line(run, r);
  if (const auto& e = r.epoch_report) {
    if (tty_) out_ << "\n";
    out_ << "epoch " << e->epoch << " done: train loss " << std::fixed << std::setprecision(4)
         << e->train_loss << ", test loss " << e->test.loss << ", test accuracy "
         << std::setprecision(2) << 100 * e->test.accuracy << "%";
    if (e->ema_accuracy) out_ << ", EMA weights " << 100 * *e->ema_accuracy << "%";
    out_ << " (eval " << std::setprecision(1) << e->eval_seconds << " s)\n" << std::flush;
  }
}

void ProgressLine::print_line(const Run& run, const StepReport& r) {
  const double ips = window_seconds_ > 0 ? window_.count / window_seconds_ : 0;
  const double done = double(run.step - first_step_), left = double(run.total_steps - run.step);
  const double eta = done > 0 ? seconds_since(start_) / done * left : 0;
  std::ostringstream line;
  line << "epoch " << r.epoch + 1 << "  step " << run.step << "/" << run.total_steps << "  loss "
       << std::fixed << std::setprecision(4) << window_.mean_loss() << "  acc "
       << std::setprecision(2) << 100 * window_.accuracy() << "%  " << std::setprecision(0) << ips
       << " img/s  ETA " << format_duration(eta);
  if (tty_)
    out_ << "\r" << line.str() << "\033[K" << std::flush;
  else
    out_ << line.str() << "\n" << std::flush;
  window_ = Tally{};
  window_seconds_ = 0;
  last_line_ = std::chrono::steady_clock::now();
}

}  // namespace vg
