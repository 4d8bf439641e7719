#include "engine/autograd/profile.h"

namespace vg {
namespace {
thread_local OpProfiler* t_profiler = nullptr;
}

OpProfiler::OpProfiler() : previous_(t_profiler), last_(Clock::now()) {
  t_profiler = this;
}
OpProfiler::~OpProfiler() {
  t_profiler = previous_;
}

void OpProfiler::charge(const std::string& name, Clock::time_point since) {
  const Clock::time_point now = Clock::now();
  seconds_[name] += std::chrono::duration<double>(now - since).count();
  last_ = now;
}

OpProfiler* active_profiler() {
  return t_profiler;
}

void profile_forward(const char* op) {
  if (OpProfiler* p = t_profiler) p->charge(op, p->last_);
}

ProfileSection::ProfileSection(const char* name)
    : profiler_(t_profiler), name_(name), start_(OpProfiler::Clock::now()) {}
ProfileSection::~ProfileSection() {
  if (profiler_) profiler_->charge(name_, start_);
}

}  // namespace vg
