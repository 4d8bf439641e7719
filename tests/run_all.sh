#!/usr/bin/env bash
# Runs every test of a build folder and closes with one line "N passed, N failed" (test cases,
# summed over the executables). Exit status 0 only when nothing failed.
# Each test file runs as a process of its own (test_<area> with doctest's --source-file filter
# on tests/<area>/<file>), VG_TEST_JOBS of them side by side (default: one per processor). Most
# tests keep about one processor busy, many of them waiting on the vitgrad processes they
# start, so on two processors the suite takes half to two thirds of the time it takes one
# file after another. A file that passes prints one line, one that fails its whole output.
# Each process gets a temp folder of its own (TMPDIR): a file whose tests all pass but leave
# anything in it fails too, so no run of the tests litters the machine. The test cases counted
# per file must add up to each executable's own count, so a test outside those files cannot go
# unrun.
set -u
build=${1:-build}
jobs=${VG_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
cd "$(dirname "$0")/.." || exit 2
# shellcheck source=tests/side_by_side.sh
. tests/side_by_side.sh
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

# One test file: runs it, writes "passed failed cases" to $results/$id and prints one line, or
# its whole output when anything failed.
run_file() {  # id, executable, source file
  local id=$1 exe=$2 file=$3 log scratch status summary left p f n
  log="$results/$id.log"
  scratch=$(mktemp -d)
  # shellcheck disable=SC2086
  TMPDIR="$scratch" "$exe" --source-file="*/$file" ${VG_TEST_ARGS:-} >"$log" 2>&1
  status=$?
  left=$(find "$scratch" -mindepth 1 -maxdepth 1 | sed "s|^$scratch/||" | sort | tr '\n' ' ')
  summary=$(grep -E '^\[doctest\] test cases:' "$log" | tail -1)
  if [ -z "$summary" ]; then
    echo "$file ended without a summary (exit status $status); its temp folder: $scratch" >>"$log"
    echo "0 1 0" >"$results/$id"
  else
    n=$(echo "$summary" | sed -E 's/.*test cases: *([0-9]+).*/\1/')
    p=$(echo "$summary" | sed -E 's/.*\| *([0-9]+) passed.*/\1/')
    f=$(echo "$summary" | sed -E 's/.*\| *([0-9]+) failed.*/\1/')
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
      echo "$file: $(basename "$exe") exited with status $status" >>"$log"
      f=1
    fi
    if [ -z "$left" ]; then
      rmdir "$scratch"
    elif [ "$status" -ne 0 ]; then  # kept, to look at
      echo "$file left its files in $scratch" >>"$log"
    else
      echo "$file passed but left files in its temp folder: $left" >>"$log"
      f=$((f + 1))
      rm -rf "$scratch"
    fi
    echo "$p $f $n" >"$results/$id"
    if [ "$f" -eq 0 ]; then
      echo "$file: $p passed" >"$log"
    fi
  fi
  flock "$results" cat "$log"  # one file's output at a time
}

# The work: every test file of every executable, test_tools' first (the longest).
exes=$(ls "$build"/test_* 2>/dev/null | sort |
  awk '/test_tools$/ {print; next} {rest = rest $0 "\n"} END {printf "%s", rest}')
exe_of=()
file_of=()
for exe in $exes; do
  [ -x "$exe" ] || continue
  area=$(basename "$exe" | sed 's/^test_//')
  for file in tests/"$area"/*_test.cpp; do
    exe_of+=("$exe")
    file_of+=("$file")
  done
done

for i in "${!exe_of[@]}"; do
  wait_for_slot "$jobs"
  run_file "$i" "${exe_of[$i]}" "${file_of[$i]}" &
done
wait

passed=0
failed=0
for exe in $exes; do
  [ -x "$exe" ] || continue
  counted=0
  for i in "${!exe_of[@]}"; do
    [ "${exe_of[$i]}" = "$exe" ] || continue
    read -r p f n <"$results/$i"
    passed=$((passed + p))
    failed=$((failed + f))
    counted=$((counted + n))
  done
  # shellcheck disable=SC2086
  total=$("$exe" --count ${VG_TEST_ARGS:-} 2>&1 |
    sed -nE 's/.*passing the current filters: *([0-9]+).*/\1/p')
  if [ "$counted" != "$total" ]; then
    echo "$(basename "$exe") has $total test cases, its files ran $counted"
    failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[ "${#exe_of[@]}" -gt 0 ] && [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
