#!/usr/bin/env bash
# Installs what is missing (Debian 12, as root or via sudo), builds hetsgd and runs the whole
# test suite with ctest. CUDA code is compiled when nvcc is found (GPU tests skip without a GPU).
#   tools/run_tests.sh [build-dir]        env: HETSGD_CMAKE_ARGS for extra configure flags
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bash tools/install_deps.sh
jobs=$(nproc)
# shellcheck disable=SC2086
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHETSGD_CUDA=AUTO \
  ${HETSGD_CMAKE_ARGS:-}
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 600
