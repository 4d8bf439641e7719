#include "models/trainer/stop_signals.h"

#include <signal.h>
#include <unistd.h>

namespace vg {
namespace {

volatile sig_atomic_t g_received = 0;
struct sigaction g_previous_int, g_previous_term;

void on_signal(int signal) {
  if (g_received != 0) _exit(128 + signal);  // the second: at once (async-signal-safe)
  g_received = signal;
}

}  // namespace

StopSignals::StopSignals() {
  g_received = 0;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and writes in progress go on
  sigaction(SIGINT, &action, &g_previous_int);
  sigaction(SIGTERM, &action, &g_previous_term);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
}

int StopSignals::received() const {
  return g_received;
}

const char* signal_name(int signal) {
  if (signal == SIGINT) return "SIGINT";
  if (signal == SIGTERM) return "SIGTERM";
  return "a signal";
}

}  // namespace vg
