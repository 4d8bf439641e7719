#!/usr/bin/env bash
# Builds and runs tests/package/consumer three ways: with find_package(vitgrad) from a
# temporary install prefix of BUILD, with add_subdirectory of the source, and with pkg-config.
# Usage: tests/package/check_package.sh SOURCE BUILD WORK   (WORK: an empty scratch folder)
set -euo pipefail
source=$(realpath "$1")
build=$(realpath "$2")
work=$3
mkdir -p "$work"
work=$(realpath "$work")
consumer=$source/tests/package/consumer
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths below the source's parent folder hash as relative ones, so a second run (same
  # WORK) compiles nothing again.
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$source")}
fi

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
echo "installed: $(cd "$work/prefix" && find . -name libvitgrad.a -o -name vitgradConfig.cmake \
  -o -name vitgrad.pc -o -name tensor.h -o -path ./bin/vitgrad | sort | tr '\n' ' ')"

cmake -S "$consumer" -B "$work/found" -DCMAKE_PREFIX_PATH="$work/prefix" "${launcher[@]}" \
  >"$work/found.log"
cmake --build "$work/found" -j2 >>"$work/found.log"
echo "find_package: $("$work/found/consumer" "$work/found")"

# The library alone, unoptimised: a subproject builds no tools and no tests.
cmake -S "$consumer" -B "$work/sub" -DVITGRAD_SOURCE="$source" -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DPORTABLE=ON "${launcher[@]}" >"$work/sub.log"
cmake --build "$work/sub" -j2 >>"$work/sub.log"
[ ! -e "$work/sub/vitgrad/vitgrad" ] || { echo "the subproject built the command line"; exit 1; }
echo "add_subdirectory: $("$work/sub/consumer" "$work/sub")"

export PKG_CONFIG_PATH=$work/prefix/lib/pkgconfig
# shellcheck disable=SC2046
g++ "$consumer/main.cpp" -o "$work/pc_consumer" $(pkg-config --cflags --libs vitgrad)
echo "pkg-config: $("$work/pc_consumer" "$work")"
