// The housekeeping of run folders: a new run never writes over another one, and a resumed
// run finds its folder as an uninterrupted run would have left it.
#pragma once

#include <cstdint>
#include <string>

namespace vg {

// Makes the run folder `dir`: a file of that name, or (with `must_be_new`) a folder that
// already holds a run, is a vg::Error and nothing is touched. Returns whether the folder
// was created.
bool make_run_folder(const std::string& dir, bool must_be_new);

// Drops from `dir`/metrics.jsonl every record after `step`, and a last line cut short by a
// killed process, so a resumed run appends exactly what an uninterrupted one would have.
void trim_metrics(const std::string& dir, int64_t step);

// The step of `dir`/last.json, -1 if there is none, and INT64_MAX if it cannot be read (so
// that nothing is taken to be later than it).
int64_t latest_saved_step(const std::string& dir);

// A new run folder for a run branched from `dir` at `step`: "<dir>-from-step<step>", or
// with "-2", "-3", ... after it when that is taken.
std::string branch_folder_name(const std::string& dir, int64_t step);

// Starts the new folder `to` as the history of run folder `from` up to `step`: its
// config.json and its metrics.jsonl records up to that step.
void copy_run_history(const std::string& from, const std::string& to, int64_t step);

}  // namespace vg
