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

}  // namespace vg
