#!/usr/bin/env bash
# Installs what is missing (Debian 12, as root or via sudo), builds hetsgd and runs the whole
# test suite with ctest. CUDA code is compiled when nvcc is found (GPU tests skip without a GPU);
# the tests across MPI ranks (label mpi, mpirun on this machine) run when Open MPI is found.
# Then the Python package's pytest suite (apps/python/tests), with the module built in place.
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
# No retry: a test that fails once has found something (timing belongs in benchmarks).
ctest --test-dir "$build" --output-on-failure --no-tests=error -j "$jobs" --timeout 600

# The label index's builder thread and the shortlist three times more under glibc's heap
# checks, a loop of the tests around the heap crash once seen in CI (kernels/README.md, "The
# builder thread"; about 30 s of CPU). Since glibc 2.34 the
# checks live in libc_malloc_debug.so, which must be preloaded for the tunable to act.
# awk reads to the end: an early exit would end ldconfig with SIGPIPE, which pipefail turns
# into this script's exit status (141) on machines whose library cache fills the pipe.
malloc_debug=$(ldconfig -p 2>/dev/null | awk '/libc_malloc_debug\.so\.0 / && !found {print $NF; found = 1}')
if [ -n "$malloc_debug" ] && [ -x "$build/tests/hetsgd_unit_tests" ]; then
  LD_PRELOAD="$malloc_debug" GLIBC_TUNABLES=glibc.malloc.check=3 MALLOC_PERTURB_=165 \
    "$build/tests/hetsgd_unit_tests" --gtest_brief=1 --gtest_repeat=3 \
    --gtest_filter='Shortlist*:LabelIndex*:*ShortlistSelect*:IndexedEvaluation*'
else
  echo "run_tests: heap-checked index tests SKIPPED: no libc_malloc_debug.so.0 or unit tests"
fi

# The Python package: its module is built in place (-DHETSGD_PYTHON=AUTO finds pybind11 and the
# Python headers that install_deps.sh installs); pytest runs with the interpreter it was built
# for. Skipped only without python3, or when the configure flags turned the module off.
pyexe_file="$build/apps/python/python_executable.txt"
if ! command -v python3 >/dev/null && [ ! -x /usr/bin/python3 ]; then
  echo "run_tests: Python tests SKIPPED: no python3 on this machine"
elif [[ " ${HETSGD_CMAKE_ARGS:-} " == *"-DHETSGD_PYTHON=OFF"* ]]; then
  echo "run_tests: Python tests SKIPPED: HETSGD_CMAKE_ARGS has -DHETSGD_PYTHON=OFF"
elif [ ! -f "$pyexe_file" ]; then
  echo "run_tests: the Python module was not built: no pybind11 or Python headers found" \
    "(Debian: pybind11-dev python3-dev python3-numpy); see the configure output" >&2
  exit 1
else
  py=$(cat "$pyexe_file")
  rc=0
  HETSGD_BIN="$PWD/$build/apps/hetsgd" PYTHONPATH="$PWD/$build/apps/python" \
    "$py" -m pytest -q -p no:cacheprovider apps/python/tests || rc=$?
  if [ "$rc" -eq 5 ]; then
    echo "run_tests: pytest collected no test in apps/python/tests" >&2
    exit 1
  fi
  [ "$rc" -eq 0 ] || exit "$rc"
fi
