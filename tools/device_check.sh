#!/usr/bin/env bash
# GPU device check for hetsgd: build with CUDA, run the GPU test lanes, benchmark, one table.
#
#   tools/device_check.sh --prepare          on a machine with apt: download the Debian packages
#                                            the build needs into .deps/debs (git-ignored)
#   tools/device_check.sh LOGDIR             on the GPU machine (nvcc, CMake, ninja, PyTorch; no
#                                            package registry): unpack .deps/debs into
#                                            .deps/prefix (never into /), build, test, benchmark
#   tools/device_check.sh --no-gpu-dry-run LOGDIR   same, but stop after building
#
# Packages come from the Debian 12 archive (what the project is developed on); they are unpacked
# with `dpkg -x`, their pkg-config files and absolute symlinks are rewritten to the local prefix
# and the Debian "alternatives" links for OpenBLAS (made by postinst scripts, which dpkg -x does
# not run) are created by hand. The prefix is used only for the build and the hetsgd binaries
# (LD_LIBRARY_PATH is not exported to PyTorch). Finishes within about 8 minutes: every phase
# has a timeout and the benchmarks are skipped when the time is nearly used up.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPS="$ROOT/.deps"
DEBS="$DEPS/debs"
PREFIX="$DEPS/prefix"
BUILD="$ROOT/build-device-check"
ARCH_DIR="x86_64-linux-gnu"
START=$(date +%s)

# What the build needs (top-level packages); --prepare adds their dependency closure.
TOP_PKGS=(libtbb-dev libtbb12 libtbbmalloc2 libtbbbind-2-5 libhwloc15
          libopenblas-dev libopenblas0 libopenblas0-pthread libopenblas-pthread-dev
          libblas3 liblapack3 libgfortran5 libquadmath0
          coinor-libclp-dev coinor-libclp1 coinor-libcoinutils-dev coinor-libcoinutils3v5
          coinor-libosi-dev coinor-libosi1v5
          libcli11-dev nlohmann-json3-dev libgtest-dev googletest
          libbenchmark-dev libbenchmark1debian pkgconf pkgconf-bin libpkgconf3)
# Never shipped: the C library, the compiler runtime and base-system libraries the GPU machine
# has in a version its own binaries (nvcc, python) depend on.
EXCLUDE_RE='^(libc6|libc6-dev|libc-dev-bin|libgcc-s1|libstdc\+\+6|gcc-[0-9]+-base|linux-libc-dev|libcrypt1|libcrypt-dev|libnsl2|libnsl-dev|libtirpc.*|rpcsvc-proto|libssl3|libk5crypto3|libkrb5.*|libgssapi-krb5-2|libcom-err2|libkeyutils1|libudev1|zlib1g|libbz2-1.0|libgomp1|debconf|dpkg|perl-base)$'

log() { printf '[device_check %3ds] %s\n' "$(( $(date +%s) - START ))" "$*" >&2; }
elapsed() { echo $(( $(date +%s) - START )); }

prepare() {
  command -v apt-get >/dev/null || { echo "--prepare needs apt-get" >&2; exit 1; }
  mkdir -p "$DEBS"
  # Resolve the closure, keep one provider per virtual/alternative: prefer what this machine
  # has installed (a resolution apt already made), else the explicitly listed packages.
  local closure pkgs=()
  closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
              --no-breaks --no-replaces --no-enhances "${TOP_PKGS[@]}" 2>/dev/null |
            grep -v '^ ' | grep -v '^<' | sort -u)
  for p in $closure; do
    [[ "$p" =~ $EXCLUDE_RE ]] && continue
    if printf '%s\n' "${TOP_PKGS[@]}" | grep -qx "$p" ||
       dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      pkgs+=("$p")
    fi
  done
  log "downloading ${#pkgs[@]} packages into $DEBS"
  (cd "$DEBS" && apt-get download "${pkgs[@]}") >"$DEBS/download.log" 2>&1 ||
    { tail -5 "$DEBS/download.log" >&2; exit 1; }
  printf '%s\n' "${pkgs[@]}" >"$DEBS/MANIFEST"
  log "done: $(ls "$DEBS"/*.deb | wc -l) .deb files ($(du -sh "$DEBS" | cut -f1))"
}

unpack() {
  [ -d "$DEBS" ] && ls "$DEBS"/*.deb >/dev/null 2>&1 ||
    { echo "no packages in $DEBS: run tools/device_check.sh --prepare on a machine with apt" >&2; exit 1; }
  if [ -f "$PREFIX/.unpacked" ]; then log "prefix already unpacked"; return; fi
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX"
  for deb in "$DEBS"/*.deb; do dpkg -x "$deb" "$PREFIX" || { echo "dpkg -x $deb failed" >&2; exit 1; }; done
  local lib="$PREFIX/usr/lib/$ARCH_DIR"
  # Absolute symlinks point into / : re-point them into the prefix.
  find "$PREFIX" -type l | while read -r l; do
    t=$(readlink "$l")
    case "$t" in /*) ln -sfn "$PREFIX$t" "$l" ;; esac
  done
  # The alternatives links for BLAS/LAPACK/OpenBLAS (postinst work).
  for name in libopenblas.so libopenblas.so.0 libblas.so libblas.so.3 liblapack.so liblapack.so.3; do
    [ -e "$lib/openblas-pthread/$name" ] && ln -sfn "openblas-pthread/$name" "$lib/$name"
  done
  # pkg-config files: prefix=/usr and any absolute /usr paths -> the local prefix.
  find "$PREFIX" -name '*.pc' -type f -print0 |
    xargs -0 -r sed -i -E "s#(^|=|-I|-L| )/usr#\1$PREFIX/usr#g"
  touch "$PREFIX/.unpacked"
  log "unpacked $(ls "$DEBS"/*.deb | wc -l) packages into $PREFIX"
}

# Environment for configuring and running against the prefix.
prefix_env() {
  local lib="$PREFIX/usr/lib/$ARCH_DIR"
  export PKG_CONFIG_PATH="$lib/pkgconfig:$PREFIX/usr/share/pkgconfig:$PREFIX/usr/lib/pkgconfig"
  PREFIX_LD="$lib:$lib/openblas-pthread"
  export LD_LIBRARY_PATH="$PREFIX_LD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  PKG_CONFIG_ARG=()
  if ! command -v pkg-config >/dev/null && [ -x "$PREFIX/usr/bin/pkgconf" ]; then
    PKG_CONFIG_ARG=(-DPKG_CONFIG_EXECUTABLE="$PREFIX/usr/bin/pkgconf")
    export PKG_CONFIG_LIBDIR="$PKG_CONFIG_PATH"
  fi
}

configure_and_build() {
  local logdir="$1"
  prefix_env
  log "configure ($BUILD)"
  timeout 180 cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DHETSGD_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DHETSGD_BUILD_BENCH=ON \
    -DCMAKE_PREFIX_PATH="$PREFIX/usr" \
    -DCMAKE_LIBRARY_PATH="$PREFIX/usr/lib/$ARCH_DIR;$PREFIX/usr/lib/$ARCH_DIR/openblas-pthread" \
    -DCMAKE_INCLUDE_PATH="$PREFIX/usr/include;$PREFIX/usr/include/$ARCH_DIR" \
    "${PKG_CONFIG_ARG[@]}" >"$logdir/configure.log" 2>&1 ||
    { tail -30 "$logdir/configure.log" >&2; return 1; }
  grep -E "hetsgd: CUDA=" "$logdir/configure.log" >&2
  # Only what the check runs (Google Benchmark micro-benchmarks are not needed here).
  local want=(hetsgd hetsgd_backend_tests hetsgd_cuda_tests hetsgd_mgpu_tests hetsgd_gpu_bench)
  local have targets=()
  have=$(ninja -C "$BUILD" -t targets all 2>/dev/null | cut -d: -f1)
  for t in "${want[@]}"; do
    if grep -qx "$t" <<<"$have"; then targets+=("$t"); else log "target $t not defined: skipped"; fi
  done
  log "build ${targets[*]}"
  timeout "${HETSGD_CHECK_BUILD_TIMEOUT:-330}" ninja -C "$BUILD" -j "${HETSGD_CHECK_JOBS:-$(nproc)}" "${targets[@]}" >"$logdir/build.log" 2>&1 ||
    { grep -E "error|FAILED" "$logdir/build.log" | head -30 >&2; return 1; }
  log "build done"
}

gpu_count() {
  if command -v nvidia-smi >/dev/null; then nvidia-smi -L 2>/dev/null | grep -c '^GPU'; else echo 0; fi
}

json_field() {  # json_field FILE KEY: the value of KEY in the last JSON line of FILE
  python3 - "$1" "$2" <<'PY'
import json, sys
try:
    rec = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")][-1]
    v = rec.get(sys.argv[2], "-")
    print(f"{v:.4g}" if isinstance(v, float) else v)
except Exception:
    print("-")
PY
}

run_check() {
  local logdir="$1"
  local table=()
  local gpus
  gpus=$(gpu_count)
  log "GPUs: $gpus"
  nvidia-smi >"$logdir/nvidia-smi.txt" 2>&1 || true
  # Tests: the GPU lanes, with skips turned into failures.
  local labels='cuda|backend' mgpu_note="mgpu: skipped ($gpus GPU)"
  if [ "$gpus" -ge 2 ]; then labels='cuda|backend|mgpu'; mgpu_note="mgpu: run"; fi
  log "ctest -L '$labels' (HETSGD_REQUIRE_GPU=1)"
  (cd "$BUILD" && HETSGD_REQUIRE_GPU=1 timeout 170 ctest -L "$labels" --output-on-failure \
     --timeout 60 -j 4) >"$logdir/ctest.log" 2>&1
  local rc=$?
  table+=("tests ($labels)|$(grep -E 'tests passed|tests failed' "$logdir/ctest.log" | tail -1) rc=$rc")
  table+=("mgpu|$mgpu_note")

  # Micro-benchmark: GEMM rate of the output layer and single-replica train_step throughput.
  if [ -x "$BUILD/tools/gpu_bench/hetsgd_gpu_bench" ] && [ "$(elapsed)" -lt 360 ]; then
    log "gpu_bench"
    timeout 90 "$BUILD/tools/gpu_bench/hetsgd_gpu_bench" 0.02 256 8 >"$logdir/gpu_bench.csv" \
      2>"$logdir/gpu_bench.err"
    while IFS=, read -r k v; do table+=("$k|$v"); done <"$logdir/gpu_bench.csv"
  else
    table+=("gpu_bench|not run (target missing or out of time)")
  fi

  # Adaptive SGD with 1, 2 and 4 virtual devices on cuda:0 through the command line.
  local cli="$BUILD/apps/hetsgd" devs
  for k in 1 2 4; do
    [ -x "$cli" ] || break
    if [ "$(elapsed)" -gt 400 ]; then table+=("adaptive x$k|skipped (time)"); continue; fi
    devs=$(printf 'cuda:0,%.0s' $(seq "$k")); devs=${devs%,}
    log "hetsgd train --devices=$devs"
    timeout 75 "$cli" train --synthetic=amazon-670k --scale=0.02 --data-seed=1 --devices="$devs" \
      --algo=adaptive --time-budget=12 --eval-max-points=2000 --json -q \
      >"$logdir/adaptive_x$k.json" 2>"$logdir/adaptive_x$k.err"
    table+=("adaptive cuda:0 x$k samples/s|$(json_field "$logdir/adaptive_x$k.json" samples_per_s) (best P@1 $(json_field "$logdir/adaptive_x$k.json" best_p1))")
  done

  # PyTorch on the same model and data (XC text written by `hetsgd data gen`).
  if [ -x "$cli" ] && [ "$(elapsed)" -lt 420 ]; then
    log "PyTorch baseline"
    timeout 60 "$cli" data gen --preset=amazon-670k --scale=0.02 --seed=1 -o "$logdir/amz" \
      >"$logdir/datagen.log" 2>&1
    env -u LD_LIBRARY_PATH timeout 75 python3 "$ROOT/tools/torch_gpu_baseline.py" \
      --train="$logdir/amz_train.txt" --test="$logdir/amz_test.txt" --time-budget=12 \
      >"$logdir/torch.json" 2>"$logdir/torch.err"
    table+=("pytorch sync SGD cuda:0 samples/s|$(json_field "$logdir/torch.json" samples_per_s) (P@1 $(json_field "$logdir/torch.json" p1))")
    rm -f "$logdir"/amz_*.txt
  else
    table+=("pytorch|skipped (time or no CLI)")
  fi

  echo
  printf '%-42s %s\n' "measurement" "value"
  printf '%-42s %s\n' "-----------" "-----"
  for row in "${table[@]}"; do printf '%-42s %s\n' "${row%%|*}" "${row#*|}"; done | tee "$logdir/summary.txt"
  return $rc
}

main() {
  case "${1:-}" in
    --prepare) prepare; exit $? ;;
    --no-gpu-dry-run)
      [ $# -ge 2 ] || { echo "usage: $0 --no-gpu-dry-run LOGDIR" >&2; exit 2; }
      mkdir -p "$2"; unpack; configure_and_build "$(cd "$2" && pwd)" || exit 1
      log "dry run: built, stopping before tests"; exit 0 ;;
    ""|-h|--help) sed -n '2,20p' "$0"; exit 2 ;;
    *)
      mkdir -p "$1"; local logdir; logdir="$(cd "$1" && pwd)"
      unpack; configure_and_build "$logdir" || exit 1
      run_check "$logdir"; exit $? ;;
  esac
}
main "$@"
