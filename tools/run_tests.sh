#!/usr/bin/env bash
# Installs what is missing (Debian 12, as root or via sudo), builds hetsgd and runs the whole
# test suite with ctest. CUDA code is compiled when nvcc is found (GPU tests skip without a GPU);
# the tests across MPI ranks (label mpi, mpirun on this machine) run when Open MPI is found.
#   tools/run_tests.sh [build-dir]        env: HETSGD_CMAKE_ARGS for extra configure flags
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bash tools/install_deps.sh
jobs=$(nproc)
# Tests are forced on: the folder may have been configured before without them (an older
# quick start), and a suite that finds no test must fail, not pass.
# shellcheck disable=SC2086
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHETSGD_CUDA=AUTO \
  -DHETSGD_BUILD_TESTS=ON -DHETSGD_BUILD_APPS=ON ${HETSGD_CMAKE_ARGS:-}
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure --no-tests=error -j "$jobs" --timeout 600
