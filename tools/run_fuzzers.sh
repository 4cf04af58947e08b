#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz (every reader of untrusted input: XC, LIBSVM,
# cache, model, checkpoint, jobs JSON, --config) with clang under ASan/UBSan (a build folder of
# their own) and runs each for a fixed time from its seed corpus in tests/fuzz/corpus/<reader>.
# A crash, sanitizer report, leak, timeout or stray exception fails the script; the input that
# caused it is left as build-fuzz/artifacts/<reader>-crash-*.
#   tools/run_fuzzers.sh [seconds-per-harness] [build-dir]
#   env: FUZZERS="xc cache" for a subset; FUZZ_APPS=ON to build the --config harness
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
build=${2:-build-fuzz}
HETSGD_WITH_FUZZ=1 bash tools/install_deps.sh
cc=$(command -v clang-14 || command -v clang) || { echo "fuzz: clang not found" >&2; exit 1; }
cxx=$(command -v clang++-14 || command -v clang++) || { echo "fuzz: clang++ not found" >&2; exit 1; }
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHETSGD_CUDA=OFF \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DHETSGD_FUZZ=ON \
  -DHETSGD_BUILD_TESTS=OFF -DHETSGD_BUILD_APPS="${FUZZ_APPS:-OFF}" \
  -DHETSGD_SANITIZE="address;undefined" \
  ${HETSGD_CMAKE_ARGS:-}
# The --config harness needs the command-line library (FUZZ_APPS=ON FUZZERS=config), a
# longer build, so the default set leaves it out.
readers=${FUZZERS:-xc libsvm cache model checkpoint jobs}
targets=()
for r in $readers; do targets+=("fuzz_$r"); done
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
mkdir -p "$build/artifacts"
for r in $readers; do
  # libFuzzer adds what it finds to the first folder: a scratch copy keeps the seeds clean.
  work="$build/corpus/$r"
  mkdir -p "$work"
  echo "fuzz: $r for ${seconds}s"
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/tests/fuzz/fuzz_$r" "$work" "tests/fuzz/corpus/$r" -max_total_time="$seconds" \
    -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=65536 \
    -artifact_prefix="$build/artifacts/$r-" -print_final_stats=1 2>"$build/artifacts/$r.log" \
    || { tail -40 "$build/artifacts/$r.log"; echo "fuzz: $r FAILED" >&2; exit 1; }
  grep -E "stat::number_of_executed_units|cov:" "$build/artifacts/$r.log" | tail -2
done
echo "fuzz: ok"
