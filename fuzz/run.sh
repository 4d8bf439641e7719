#!/usr/bin/env bash
# Runs each libFuzzer harness of a fuzz build for a bounded time from its committed seed
# corpus, VG_FUZZ_JOBS of them side by side (default: one per processor; each harness runs on
# one). Prints each harness's run count and peak memory; a crash, sanitizer report, leak or
# hang prints the end of that harness's log and fails the run. The input that caused it is
# written to <build>/crashes/<harness>/ (add it to the bad-input corpus once fixed).
# Usage: fuzz/run.sh <build folder> <seconds> <harness>...
set -u
build=$1 seconds=$2
shift 2
jobs=${VG_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
cd "$(dirname "$0")/.." || exit 2
# shellcheck source=tests/side_by_side.sh
. tests/side_by_side.sh

fuzz_one() {  # harness: runs it; its exit status is the harness's
  local f=$1
  mkdir -p "$build/corpus/$f" "$build/crashes/$f"
  "./$build/${f}_fuzz" "$build/corpus/$f" "fuzz/corpus/$f" -max_total_time="$seconds" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/crashes/$f/" >"$build/$f.log" 2>&1
}

report() {  # harness, exit status: prints its figures, or its log's end when it found something
  local f=$1 status=$2 rss
  rss=$(grep -E 'stat::peak_rss_mb' "$build/$f.log" | awk '{print ", peak RSS " $2 " MB"}')
  echo "$f: $(grep -E '^Done [0-9]+ runs' "$build/$f.log" | tail -1)$rss"
  if [ "$status" -ne 0 ]; then
    tail -40 "$build/$f.log"
    echo "fuzz: $f failed (exit status $status)"
  fi
}

declare -A pid_of_harness
failed=0
for f in "$@"; do
  wait_for_slot "$jobs"
  echo "fuzzing $f for $seconds s"
  fuzz_one "$f" &
  pid_of_harness[$f]=$!
done
for f in "$@"; do
  wait "${pid_of_harness[$f]}"
  status=$?
  report "$f" "$status"
  [ "$status" -eq 0 ] || failed=1
done
[ "$failed" -eq 0 ] || exit 1
echo "fuzz: $* ran $seconds s each without a finding"
