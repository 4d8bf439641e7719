#!/usr/bin/env bash
# Runs every test executable of a build folder and closes with one line "N passed, N failed"
# (test cases, summed over the executables). Exit status 0 only when nothing failed.
# Each executable gets a temp folder of its own (TMPDIR): a program whose tests all pass but
# leave anything in it fails too, so no run of the tests litters the machine.
set -u
build=${1:-build}
cd "$(dirname "$0")/.." || exit 2
passed=0
failed=0
ran=0
for exe in $(ls "$build"/test_* 2>/dev/null | sort); do
  [ -x "$exe" ] || continue
  ran=$((ran + 1))
  log=$(mktemp)
  scratch=$(mktemp -d)
  # shellcheck disable=SC2086
  TMPDIR="$scratch" "$exe" ${VG_TEST_ARGS:-} 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  left=$(find "$scratch" -mindepth 1 -maxdepth 1 | sed "s|^$scratch/||" | sort | tr '\n' ' ')
  summary=$(grep -E '^\[doctest\] test cases:' "$log" | tail -1)
  rm -f "$log"
  if [ -z "$summary" ]; then
    echo "$(basename "$exe") ended without a summary (exit status $status); its temp folder: $scratch"
    failed=$((failed + 1))
    continue
  fi
  p=$(echo "$summary" | sed -E 's/.*\| *([0-9]+) passed.*/\1/')
  f=$(echo "$summary" | sed -E 's/.*\| *([0-9]+) failed.*/\1/')
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "$(basename "$exe") exited with status $status"
    failed=$((failed + 1))
  fi
  if [ -z "$left" ]; then
    rmdir "$scratch"
  elif [ "$status" -ne 0 ]; then  # kept, to look at
    echo "$(basename "$exe") left its files in $scratch"
  else
    echo "$(basename "$exe") passed but left files in its temp folder: $left"
    failed=$((failed + 1))
    rm -rf "$scratch"
  fi
done
echo "$passed passed, $failed failed"
[ "$ran" -gt 0 ] && [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
