# Sourced by tests/run_all.sh and fuzz/run.sh, which run several programs at once, one per
# processor.
# Side by side, OpenMP threads that spin while they wait hold the cores the other programs
# need: they wait as the vitgrad command's do (tools/main.cpp), unless told otherwise. The
# fuzz harnesses run parallel loops too: beside the IDX harness, the checkpoint harness made
# 21329-29736 runs in 15 s with libomp's own spin and 28889-30696 sleeping (three rounds).
if [ -z "${OMP_WAIT_POLICY:-}" ] && [ -z "${GOMP_SPINCOUNT:-}" ]; then
  export OMP_WAIT_POLICY=passive GOMP_SPINCOUNT=1000
fi

# Returns once fewer than $1 of this shell's background jobs are running.
wait_for_slot() {
  while [ "$(jobs -rp | wc -l)" -ge "$1" ]; do wait -n; done
}
