// Ctrl-C and a job scheduler's SIGTERM stop a run without losing it: the first SIGINT or
// SIGTERM asks the loop to stop after its current step (the run then saves last.json and
// says how to resume); a second one ends the process at once, and since every save is
// atomic, the last checkpoint written stays whole.
#pragma once

namespace vg {

class StopSignals {
 public:
  StopSignals();   // installs the handlers
  ~StopSignals();  // puts the previous ones back
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The first signal received since construction (SIGINT or SIGTERM), 0 if none.
  int received() const;
};

// "SIGINT", "SIGTERM" or "a signal".
const char* signal_name(int signal);

}  // namespace vg
