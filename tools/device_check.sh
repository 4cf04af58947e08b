#!/usr/bin/env bash
# GPU device check for hetsgd: one command that builds, tests and measures on a GPU machine and
# always ends with its table, whatever fails. tools/DEVICE_CHECK.md describes every phase, the
# options and what has run on a GPU so far.
#
#   tools/device_check.sh --prepare                  where apt works: download the Debian
#                                                    packages the build needs into .deps/debs
#                                                    and copy bibtex into .deps/datasets
#                                                    (git-ignored; carry .deps along)
#   tools/device_check.sh [OPTIONS] OUTDIR           on the GPU machine (nvcc, CMake, ninja,
#                                                    PyTorch; no package registry)
#   tools/device_check.sh --no-gpu-dry-run [OPTIONS] OUTDIR
#                                                    the rehearsal without a GPU: the same
#                                                    phases and table, every GPU phase skipped,
#                                                    the host's copies of the carried packages
#                                                    hidden (a private mount namespace)
# Options:
#   --budget S     seconds for the whole check (default 420, so that a second call fits in a
#                  15-minute allowance; 2400 for a dry run). Every phase gets at most what is
#                  left and is skipped, not killed, when too little is left for it.
#   --build-cap S  seconds the build may take (default 240; 2000 for a dry run)
#   --jobs N       parallel build jobs (default: all cores)
#   --archs LIST   CUDA architectures (default 90)
#   --host-deps    dry run only: leave the host's copies visible (faster, proves less)
# The environment variables HETSGD_CHECK_BUDGET, HETSGD_CHECK_BUILD_CAP, HETSGD_CHECK_JOBS and
# HETSGD_CHECK_ARCHS set the same defaults.
#
# OUTDIR receives, flat: env.txt check.log build.log tests.log sanitizer.log bench.csv
# runs.jsonl summary.md. The environment report goes first to stdout (with the CUDA toolkit's
# headers and libraries CMake found); the table is printed last, on any exit.
#
# Phases, in order of value: environment; unpack + configure + build (ninja -k 0) and the audit
# of where every header and library came from; every CUDA test with HETSGD_REQUIRE_GPU=1 (the
# device-wide memory test alone); the card's ceilings (copy bandwidth; FP32/TF32/BF16 GEMMs at
# the peak shape and at the model's shapes); amazon-670k-shaped train_step samples/s and peak
# GPU memory; PyTorch on the same recipe; adaptive against sync on virtual and mixed devices;
# compute-sanitizer memcheck last.
#
# Packages come from the Debian 12 archive; they are unpacked with `dpkg -x` into .deps/prefix
# (never into /), pkg-config files and absolute symlinks are re-pointed there, and the Debian
# alternatives links for OpenBLAS are made by hand. zlib and bzip2 (named by coinutils.pc as
# -lz -lbz2) are taken from the machine when it can link them, else from the packages.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPS="$ROOT/.deps"
DEBS="$DEPS/debs"
FALLBACK="$DEBS/fallback"
PREFIX="$DEPS/prefix"
BUILD="$ROOT/build-device-check"
SCRATCH="$BUILD/check-scratch"
ARCH_DIR="x86_64-linux-gnu"
START=$(date +%s)
BUDGET=420     # set in main(): --budget
BUILD_CAP=240  # --build-cap
JOBS=1         # --jobs
ARCHS=90       # --archs
DEADLINE=0
MAX_FILE_BYTES=$((15 * 1024 * 1024))

TOP_PKGS=(libtbb-dev libtbb12 libtbbmalloc2 libtbbbind-2-5 libhwloc15
          libopenblas-dev libopenblas0 libopenblas0-pthread libopenblas-pthread-dev
          libblas3 liblapack3 libgfortran5 libquadmath0
          coinor-libclp-dev coinor-libclp1 coinor-libcoinutils-dev coinor-libcoinutils3v5
          coinor-libosi-dev coinor-libosi1v5
          libcli11-dev nlohmann-json3-dev libhnswlib-dev libgtest-dev googletest
          libbenchmark-dev libbenchmark1debian pkgconf pkgconf-bin libpkgconf3)
# Unpacked only when the machine cannot link -lz / -lbz2 itself.
FALLBACK_PKGS=(zlib1g zlib1g-dev libbz2-1.0 libbz2-dev)
# Never shipped: the C library, the compiler runtime and base-system libraries the GPU machine
# has in a version its own binaries (nvcc, python) depend on.
EXCLUDE_RE='^(libc6|libc6-dev|libc-dev-bin|libgcc-s1|libstdc\+\+6|gcc-[0-9]+-base|linux-libc-dev|libcrypt1|libcrypt-dev|libnsl2|libnsl-dev|libtirpc.*|rpcsvc-proto|libssl3|libk5crypto3|libkrb5.*|libgssapi-krb5-2|libcom-err2|libkeyutils1|libudev1|zlib1g|zlib1g-dev|libbz2-1.0|libbz2-dev|libgomp1|debconf|dpkg|perl-base)$'

OUT=""
LOG=/dev/stderr
ROWS=()
GPUS=0
DRY=0
BUILT=0
GPU_SKIP=""  # why the GPU phases are skipped, empty when they run

log() {
  local line
  line=$(printf '[device_check %3ds] %s' "$(($(date +%s) - START))" "$*")
  echo "$line" >&2
  [ "$LOG" != /dev/stderr ] && echo "$line" >>"$LOG"
  return 0
}
left() { echo $((DEADLINE - $(date +%s))); }

# A table row; cells never contain the separator.
row() {
  local a="${1//|//}" b="${2//|//}" c="${3//|//}"
  ROWS+=("$a|$b|$c")
}

print_table() {
  local rc=$?
  [ ${#ROWS[@]} -eq 0 ] && return
  local table
  table=$({
    echo
    echo "hetsgd device check ($(date -u +%Y-%m-%dT%H:%MZ), $(($(date +%s) - START)) s of $BUDGET)"
    printf '| %-36s | %-8s | %s\n' "phase" "status" "result"
    printf '|%s|%s|%s\n' "--------------------------------------" "----------" "-------"
    local r a b c
    for r in "${ROWS[@]}"; do
      IFS='|' read -r a b c <<<"$r"
      printf '| %-36s | %-8s | %s\n' "$a" "$b" "$c"
    done
  })
  echo "$table"
  [ -n "$OUT" ] && echo "$table" >"$OUT/summary.md"
  cap_files
  exit "$rc"
}

# Keeps every result file under the transfer limit (the end of a log is what matters).
cap_files() {
  [ -n "$OUT" ] || return 0
  local f
  for f in "$OUT"/*; do
    [ -f "$f" ] || continue
    if [ "$(stat -c %s "$f")" -gt "$MAX_FILE_BYTES" ]; then
      tail -c "$MAX_FILE_BYTES" "$f" >"$f.tmp" && mv "$f.tmp" "$f"
    fi
  done
}

# phase_time NAME MIN CAP: sets T to the seconds the phase may use (at most CAP, leaving 10 s
# for the table), or fails (and records a skipped row) when fewer than MIN are left.
# Further arguments name the phase's other rows, skipped with it.
T=0
phase_time() {
  local name="$1" min="$2" cap="$3" l
  shift 3
  l=$(($(left) - 10))
  if [ "$l" -lt "$min" ]; then
    skip_rows "time: ${l}s left of the ${BUDGET}s budget, needs ${min}s" "$name" "$@"
    return 1
  fi
  [ "$l" -lt "$cap" ] && cap=$l
  T=$cap
}

# gpu_phase NAME...: true when GPU phases run; otherwise records each named row as skipped,
# so a dry run prints the same rows as a real check.
gpu_phase() {
  [ -z "$GPU_SKIP" ] && return 0
  local name
  for name in "$@"; do row "$name" skipped "$GPU_SKIP"; done
  return 1
}

# gpu_rows MIN CAP NAME...: gpu_phase, then phase_time for the first NAME with the others as
# its rows: sets T, or fails (the rows recorded as skipped) when the phase does not run.
gpu_rows() {
  local min="$1" cap="$2"
  shift 2
  gpu_phase "$@" && phase_time "$1" "$min" "$cap" "${@:2}"
}

# rc_status RC: a row's status for a command's exit code: ok, or "rc RC".
rc_status() { if [ "$1" -eq 0 ]; then echo ok; else echo "rc $1"; fi; }

# skip_rows REASON NAME...: the rows of a phase that did not run.
skip_rows() {
  local why="$1" name
  shift
  for name in "$@"; do row "$name" skipped "$why"; done
}

# ---------------------------------------------------------------------------------------------
prepare() {
  command -v apt-get >/dev/null || { echo "--prepare needs apt-get" >&2; exit 1; }
  mkdir -p "$DEBS" "$FALLBACK"
  # Resolve the closure, keep one provider per virtual/alternative: prefer what this machine
  # has installed (a resolution apt already made), else the explicitly listed packages.
  local closure pkgs=() p
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
  log "downloading ${#pkgs[@]} packages into $DEBS, ${#FALLBACK_PKGS[@]} into $FALLBACK"
  (cd "$DEBS" && apt-get download "${pkgs[@]}") >"$DEPS/download.log" 2>&1 ||
    { tail -5 "$DEPS/download.log" >&2; exit 1; }
  (cd "$FALLBACK" && apt-get download "${FALLBACK_PKGS[@]}") >>"$DEPS/download.log" 2>&1 ||
    { tail -5 "$DEPS/download.log" >&2; exit 1; }
  printf '%s\n' "${pkgs[@]}" >"$DEBS/MANIFEST"
  # The engine-level GPU tests train on real bibtex: a copy travels with the packages
  # (HETSGD_DATASETS, else the folder the tests use by default, next to the checkout).
  local data="${HETSGD_DATASETS:-$ROOT/../shared/datasets}"
  if [ -f "$data/bibtex/train.txt" ]; then
    mkdir -p "$DEPS/datasets" && cp -r "$data/bibtex" "$DEPS/datasets/"
    log "copied $data/bibtex into $DEPS/datasets"
  else
    log "no bibtex under $data: the engine-level GPU tests will skip on the GPU machine"
  fi
  log "done: $(ls "$DEBS"/*.deb "$FALLBACK"/*.deb | wc -l) .deb files ($(du -sh "$DEBS" | cut -f1))"
}

# ---------------------------------------------------------------------------------------------
environment() {
  local f="$OUT/env.txt"
  {
    echo "date: $(date -u)"
    echo "host: $(uname -srm), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
    if command -v nvidia-smi >/dev/null; then
      nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit,temperature.gpu \
        --format=csv 2>&1
    else
      echo "nvidia-smi: not found"
    fi
    echo "nvcc: $( (nvcc --version 2>/dev/null || /usr/local/cuda/bin/nvcc --version 2>/dev/null) | grep -i release || echo not found)"
    echo "cmake: $(cmake --version 2>/dev/null | head -1 || echo not found)"
    echo "ninja: $(ninja --version 2>/dev/null || echo not found)"
    echo "c++: $(c++ --version 2>/dev/null | head -1 || echo not found)"
    echo "glibc: $(getconf GNU_LIBC_VERSION 2>/dev/null || ldd --version 2>/dev/null | head -1)"
    local stdcxx
    stdcxx=$(ldconfig -p 2>/dev/null | awk '/libstdc\+\+\.so\.6 / && !found {print $NF; found = 1}')
    if [ -n "$stdcxx" ]; then
      echo "libstdc++: $(readlink -f "$stdcxx"), newest $(grep -ao 'GLIBCXX_[0-9.]*' "$stdcxx" | sort -uV | tail -1)"
    else
      echo "libstdc++: not found by ldconfig"
    fi
    echo "compute-sanitizer: $(compute-sanitizer --version 2>/dev/null | tail -1 || echo not found)"
    echo "python3: $(python3 --version 2>&1)"
    echo "torch: $(env -u LD_LIBRARY_PATH timeout 60 python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 | tail -1)"
    echo "ccache: $(ccache --version 2>/dev/null | head -1 || echo not found)"
  } >"$f" 2>&1
  cat "$f"
  if command -v nvidia-smi >/dev/null; then
    GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  fi
  local gpu driver clocks glibc
  gpu=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1)
  driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
  clocks=$(nvidia-smi --query-gpu=clocks.sm,clocks.max.sm --format=csv,noheader 2>/dev/null | head -1)
  glibc=$(grep '^glibc:' "$f" | cut -d' ' -f2-)
  row "environment" ok "${GPUS} GPU ${gpu:-none}; driver ${driver:--}; SM clock now/max ${clocks:--}; $(grep '^nvcc:' "$f" | sed 's/.*release/nvcc/'); ${glibc}"
}

# ---------------------------------------------------------------------------------------------
# True when the machine's own toolchain links -l$1.
can_link() {
  local cc
  cc=$(command -v cc || command -v gcc || command -v c++) || return 1
  echo 'int main(void){return 0;}' | "$cc" -x c - -o /dev/null "-l$1" >/dev/null 2>&1
}

unpack() {
  if ! ls "$DEBS"/*.deb >/dev/null 2>&1; then
    echo "no packages in $DEBS: run tools/device_check.sh --prepare on a machine with apt" >&2
    return 1
  fi
  if [ -f "$PREFIX/.unpacked" ]; then log "prefix already unpacked"; return 0; fi
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX"
  local deb
  for deb in "$DEBS"/*.deb; do dpkg -x "$deb" "$PREFIX" || { echo "dpkg -x $deb failed" >&2; return 1; }; done
  local lib
  for lib in z bz2; do
    if can_link "$lib"; then continue; fi
    log "the machine cannot link -l$lib: using the packaged one"
    for deb in "$FALLBACK"/*.deb; do
      case "$(basename "$deb")" in
        zlib1g*) [ "$lib" = z ] && dpkg -x "$deb" "$PREFIX" ;;
        libbz2*) [ "$lib" = bz2 ] && dpkg -x "$deb" "$PREFIX" ;;
      esac
    done
  done
  lib="$PREFIX/usr/lib/$ARCH_DIR"
  # Absolute symlinks point into / : re-point them into the prefix.
  find "$PREFIX" -type l | while read -r l; do
    t=$(readlink "$l")
    case "$t" in /*) ln -sfn "$PREFIX$t" "$l" ;; esac
  done
  # Packages unpacked into /lib (usrmerge layouts) are linked next to the others.
  if [ -d "$PREFIX/lib/$ARCH_DIR" ]; then
    mkdir -p "$lib"
    for f in "$PREFIX/lib/$ARCH_DIR"/*; do [ -e "$lib/$(basename "$f")" ] || ln -s "$f" "$lib/"; done
  fi
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

prefix_env() {
  local lib="$PREFIX/usr/lib/$ARCH_DIR"
  export PKG_CONFIG_PATH="$lib/pkgconfig:$PREFIX/usr/share/pkgconfig:$PREFIX/usr/lib/pkgconfig"
  export LD_LIBRARY_PATH="$lib:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LIBRARY_PATH="$lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
  PKG_CONFIG_ARG=()
  if ! command -v pkg-config >/dev/null && [ -x "$PREFIX/usr/bin/pkgconf" ]; then
    PKG_CONFIG_ARG=(-DPKG_CONFIG_EXECUTABLE="$PREFIX/usr/bin/pkgconf")
    export PKG_CONFIG_LIBDIR="$PKG_CONFIG_PATH"
  fi
  LAUNCHER=()
  if command -v ccache >/dev/null; then
    # Paths under the checkout hash as relative ones, so another clone reuses the cache. nvcc
    # gets include folders as -isystem=PATH, a form base_dir does not rewrite: those stay out of
    # the hash (the headers they lead to are still hashed, by their checkout-relative paths).
    export CCACHE_BASEDIR="$ROOT"
    export CCACHE_IGNOREOPTIONS="-isystem=*"
    LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  fi
}

# The targets the check runs (not the CPU unit tests nor the CPU micro-benchmarks).
WANT=(hetsgd hetsgd_backend_tests hetsgd_cuda_tests hetsgd_mgpu_tests hetsgd_gpu_bench)

# have BIN: true when the build produced BIN (a path under $BUILD); a failed target does not
# stop the phases that need only the others (ninja -k 0).
have() { [ -f "$BUILD/$1" ]; }

build() {
  phase_time build 60 "$BUILD_CAP" "carried set" || return 1
  local t=$T
  local blog="$OUT/build.log" t0
  t0=$(date +%s)
  if ! unpack >>"$blog" 2>&1; then
    row build failed "unpacking .deps/debs: $(tail -1 "$blog")"
    return 1
  fi
  prefix_env
  command -v nvcc >/dev/null || [ ! -x /usr/local/cuda/bin/nvcc ] || export PATH="/usr/local/cuda/bin:$PATH"
  log "configure ($BUILD)"
  # MPI off: the check measures one process, and an MPI found on the host would be a dependency
  # the carried set does not hold. -lineinfo lets compute-sanitizer name source lines.
  if ! timeout "$t" cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DHETSGD_CUDA=ON -DHETSGD_MPI=OFF -DHETSGD_BUILD_TESTS=ON -DHETSGD_BUILD_BENCH=ON \
      -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" -DCMAKE_CUDA_FLAGS="-lineinfo" \
      -DCMAKE_PREFIX_PATH="$PREFIX/usr" \
      -DCMAKE_LIBRARY_PATH="$PREFIX/usr/lib/$ARCH_DIR;$PREFIX/usr/lib/$ARCH_DIR/openblas-pthread" \
      -DCMAKE_INCLUDE_PATH="$PREFIX/usr/include;$PREFIX/usr/include/$ARCH_DIR" \
      "${LAUNCHER[@]}" "${PKG_CONFIG_ARG[@]}" >>"$blog" 2>&1; then
    row build failed "configure: $(grep -m1 -E 'Error|error' "$blog" | cut -c1-160)"
    skip_rows "configure failed" "carried set"
    return 1
  fi
  grep -E "hetsgd: CUDA=" "$blog" >&2
  found_report
  local names targets=() x
  names=$(ninja -C "$BUILD" -t targets all 2>/dev/null | cut -d: -f1)
  for x in "${WANT[@]}"; do
    if grep -qx "$x" <<<"$names"; then targets+=("$x"); else log "target $x not defined: skipped"; fi
  done
  t=$((t - ($(date +%s) - t0)))
  log "build ${targets[*]} (at most ${t}s, ninja -k 0)"
  timeout "$t" ninja -C "$BUILD" -k 0 -j "$JOBS" "${targets[@]}" >>"$blog" 2>&1
  local rc=$? failed
  failed=$(grep -E '^FAILED: ' "$blog" | sed -E 's/^FAILED: //' | awk '{print $1}' | sort -u | head -3 | paste -sd' ' -)
  if [ $rc -eq 124 ]; then
    row build failed "timed out after ${t}s at $(grep -o '^\[[0-9]*/[0-9]*\]' "$blog" | tail -1) (--build-cap)"
  elif [ $rc -ne 0 ]; then
    row build failed "$(grep -m1 -E 'error' "$blog" | cut -c1-120); failed: ${failed:-?}"
  else
    row build ok "$(($(date +%s) - t0))s: ${targets[*]} ($(grep -o 'CUDA=[^ ]*' "$blog" | head -1), archs $ARCHS)"
  fi
  audit_carried_set
  have apps/hetsgd || have tests/hetsgd_cuda_tests || return 1
  BUILT=1
}

# The CUDA toolkit's headers and libraries (and every other dependency) as CMake found them:
# appended to env.txt and printed, so a wrong toolkit or a host copy shows before any phase.
found_report() {
  local cache="$BUILD/CMakeCache.txt" f="$OUT/env.txt" inc
  {
    echo "found by CMake ($BUILD):"
    grep -E '^(CMAKE_CUDA_COMPILER|CUDAToolkit_(BIN_DIR|INCLUDE_DIR|LIBRARY_DIR|LIBRARY_ROOT|NVCC_EXECUTABLE)|CUDA_(cudart|cudart_static|cublas|cublasLt|cusparse|nvrtc)_LIBRARY|NCCL_(INCLUDE_DIR|LIBRARY)|HETSGD_(CBLAS|HNSWLIB)_INCLUDE|BLAS_[A-Za-z_]*_LIBRARY|TBB_DIR|nlohmann_json_DIR|CLI11_DIR|GTest_DIR|benchmark_DIR|PKG_CONFIG_EXECUTABLE)(:[A-Z]+)?=' \
      "$cache" 2>/dev/null | sed -E 's/:[A-Z]+=/ = /; s/^/  /'
    grep -E '^CLP_(INCLUDE_DIRS|LINK_LIBRARIES):' "$cache" 2>/dev/null | sed -E 's/:[A-Z]+=/ = /; s/^/  /'
    inc=$(sed -n 's/^CMAKE_CUDA_COMPILER:[A-Z]*=//p' "$cache" 2>/dev/null)
    inc="$(dirname "$(dirname "${inc:-/usr/local/cuda/bin/nvcc}")")/include"
    if [ -n "$inc" ]; then
      echo "  toolkit headers: $(cd "$inc" 2>/dev/null && ls cuda_runtime.h cublas_v2.h cublasLt.h cusparse.h nccl.h cub/version.cuh cccl/cub/version.cuh 2>/dev/null | paste -sd' ' -)"
      echo "  CUDART_VERSION $(awk '/#define CUDART_VERSION/ {print $3}' "$inc/cuda_runtime_api.h" 2>/dev/null), CUB $(cat "$inc/cub/version.cuh" "$inc/cccl/cub/version.cuh" 2>/dev/null | awk '/#define CUB_VERSION / {print $3; exit}')"
    fi
  } | tee -a "$f"
}

# Where every header of the build and every library of its binaries came from. Anything that
# is neither the checkout, the carried prefix, the CUDA toolkit, the compiler nor the C
# library is a dependency the carried set does not hold: the row fails and names it.
audit_carried_set() {
  if ! have apps/hetsgd && ! have tests/hetsgd_cuda_tests; then
    skip_rows "nothing built" "carried set"
    return 0
  fi
  local cuda_root
  cuda_root=$(sed -n 's/^CUDAToolkit_LIBRARY_ROOT:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
  cuda_root=$(readlink -f "${cuda_root:-/usr/local/cuda}")
  local headers libs bin
  headers=$(ninja -C "$BUILD" -t deps 2>/dev/null | awk 'NF == 1 && $1 ~ /^\// {print $1}' | sort -u)
  libs=$(for bin in apps/hetsgd lib/libhetsgd_cuda.so tests/hetsgd_cuda_tests tests/hetsgd_backend_tests tools/gpu_bench/hetsgd_gpu_bench; do
           have "$bin" && ldd "$BUILD/$bin" 2>/dev/null | awk '$2 == "=>" {print $3} $2 == "not" {print $1 " (not found)"}'
         done | sort -u)
  local host
  host=$( { echo "$headers"; echo "$libs"; } | while read -r f; do
    [ -n "$f" ] || continue
    local r
    r=$(readlink -f "${f%% *}" 2>/dev/null || echo "$f")
    case "$r" in
      "$ROOT"/*|"$PREFIX"/*|"$cuda_root"/*|/usr/local/cuda*) continue ;;
      /usr/include/c++/*|/usr/lib/gcc/*|/usr/include/linux/*|/usr/include/asm-generic/*) continue ;;
      /usr/include/"$ARCH_DIR"/bits/*|/usr/include/"$ARCH_DIR"/sys/*|/usr/include/"$ARCH_DIR"/gnu/*) continue ;;
      /usr/include/"$ARCH_DIR"/asm/*|/usr/include/"$ARCH_DIR"/c++/*) continue ;;
      /usr/include/*/*) ;;  # a folder of its own: some package's
      /usr/include/*.h) continue ;;  # the C library's top-level headers (and zlib/bzip2)
      */libc.so*|*/libm.so*|*/libdl.so*|*/librt.so*|*/libpthread.so*|*/libstdc++.so*|*/libgcc_s.so*) continue ;;
      */libz.so*|*/libbz2.so*|*/ld-linux*|*/libcuda.so*|*/libnvidia*) continue ;;
    esac
    echo "$f"
  done | sort -u)
  {
    echo "== carried-set audit: $(wc -l <<<"$headers") headers, $(wc -l <<<"$libs") libraries"
    echo "$libs" | sed 's/^/  lib /'
    [ -n "$host" ] && echo "$host" | sed 's/^/  FROM THE HOST: /'
  } >>"$OUT/build.log"
  if [ -z "$host" ]; then
    row "carried set" ok "$(wc -l <<<"$headers") headers, $(wc -l <<<"$libs") libraries: checkout, .deps/prefix, CUDA toolkit, compiler and C library only${HIDDEN_NOTE}"
  else
    row "carried set" FAILED "$(wc -l <<<"$host") from the host, e.g. $(head -2 <<<"$host" | paste -sd' ' -)"
  fi
}

# Dry run: makes the host's copies of the carried packages unreadable (bind-mounts /dev/null
# over each of their files in a private mount namespace), so a header or library the carried
# set lacks fails the build instead of being found in /usr. Sets HIDDEN_NOTE.
HIDDEN_NOTE=""
hide_host_copies() {
  local pkgs=("${TOP_PKGS[@]}" libopenmpi-dev) p files n=0 f
  mount --make-rprivate / 2>/dev/null || true
  files=$(for p in "${pkgs[@]}"; do
            dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || continue
            dpkg -L "$p" 2>/dev/null
          done | grep -E '^/usr/(include|lib|share/(cmake|pkgconfig)|bin)/' |
          while read -r f; do [ -f "$f" ] && readlink -f "$f"; done | sort -u)
  while read -r f; do
    [ -n "$f" ] || continue
    mount --bind /dev/null "$f" 2>/dev/null && n=$((n + 1))
  done <<<"$files"
  HIDDEN_NOTE="; host copies hidden ($n files)"
  log "hid $n host files of the carried packages (e.g. /usr/include/hnswlib/hnswlib.h readable: $([ -s /usr/include/hnswlib/hnswlib.h ] && echo yes || echo no))"
}

# ---------------------------------------------------------------------------------------------
tests() {
  local main="tests (cuda, backend)" eng="tests (engine on GPUs)"
  local alone="tests (device-wide memory, alone)" mgpu="tests (mgpu)"
  gpu_rows 30 150 "$main" "$eng" "$alone" "$mgpu" || return 0
  local t=$T labels='cuda|backend' flaky='FailedConstructionReleasesEverything|EstimateCoversAllocation'
  [ "$GPUS" -ge 2 ] && labels='cuda|backend|mgpu'
  # The tests that compare device-wide free memory run alone, after the others: any other
  # process allocating on the GPU at the same time would move their numbers.
  [ -f "$DEPS/datasets/bibtex/train.txt" ] && export HETSGD_DATASETS="$DEPS/datasets"
  log "HETSGD_REQUIRE_GPU=1 ctest -L '$labels' -E '$flaky' (at most ${t}s)"
  (cd "$BUILD" && HETSGD_REQUIRE_GPU=1 timeout "$t" ctest -L "$labels" -E "$flaky" \
     --output-on-failure --timeout 120 -j 4) >"$OUT/tests.log" 2>&1
  local rc=$? summary failed
  summary=$(grep -E 'tests passed|tests failed' "$OUT/tests.log" | tail -1)
  failed=$(grep -E '^\s+[0-9]+ - ' "$OUT/tests.log" | sed -E 's/^\s+[0-9]+ - //; s/ \(.*//' | head -3 | paste -sd, -)
  row "$main" "$([ $rc -eq 0 ] && echo ok || echo FAILED)" "-L '$labels': ${summary:-no summary (rc $rc)}${failed:+; first: $failed}"
  local eng_ok eng_all
  eng_all=$(grep -cE 'Test +#[0-9]+: GpuEngine' "$OUT/tests.log")
  eng_ok=$(grep -E 'Test +#[0-9]+: GpuEngine' "$OUT/tests.log" | grep -c ' Passed')
  row "$eng" "$([ "$eng_all" -gt 0 ] && [ "$eng_ok" -eq "$eng_all" ] && echo ok || echo FAILED)" \
    "$eng_ok of $eng_all passed: adaptive on cuda:0,cuda:0 and cuda:0,cpu:0 to a bibtex P@1, CUDA checkpoint/resume, one objective above 100,000 labels"
  if phase_time "$alone" 10 60; then
    (cd "$BUILD" && HETSGD_REQUIRE_GPU=1 HETSGD_GPU_TEST_ALONE=1 timeout "$T" ctest -R "$flaky" \
       --output-on-failure \
       --timeout 60 -j 1) >>"$OUT/tests.log" 2>&1
    rc=$?
    summary=$(grep -E 'tests passed|tests failed' "$OUT/tests.log" | tail -1)
    row "$alone" "$([ $rc -eq 0 ] && echo ok || echo FAILED)" "${summary:-no summary (rc $rc)}"
  fi
  if [ "$GPUS" -lt 2 ]; then row "$mgpu" skipped "$GPUS GPU: needs 2"; fi
}

# Last: the slowest phase per result, and the one most likely to report tool noise. NCCL's
# start-up probes and cuBLAS's capability queries return errors on purpose; with
# --report-api-errors no only memory errors count.
sanitizer() {
  gpu_phase "compute-sanitizer memcheck" || return 0
  if ! command -v compute-sanitizer >/dev/null; then
    row "compute-sanitizer memcheck" skipped "compute-sanitizer not found"
    return 0
  fi
  phase_time "compute-sanitizer memcheck" 30 120 || return 0
  local t=$T
  log "compute-sanitizer memcheck of the GPU parity and kernel tests (at most ${t}s)"
  local errs=0 rc=0 start
  start=$(date +%s)
  local cs=(compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3)
  {
    timeout $((t * 2 / 3)) "${cs[@]}" "$BUILD/tests/hetsgd_backend_tests" \
      --gtest_filter='*/cuda0:-*LargeLabel*' || rc=$?
    timeout $((t - ($(date +%s) - start))) "${cs[@]}" "$BUILD/tests/hetsgd_cuda_tests" \
      --gtest_filter='-*FailedConstruction*:*GpuEngine*' || rc=$((rc > 0 ? rc : $?))
  } >"$OUT/sanitizer.log" 2>&1
  errs=$(grep -Eo 'ERROR SUMMARY: [0-9]+' "$OUT/sanitizer.log" | awk '{s += $3} END {print s + 0}')
  row "compute-sanitizer memcheck" "$([ "$rc" -eq 0 ] && [ "$errs" -eq 0 ] && echo ok || echo FAILED)" \
    "$errs errors; rc $rc ($(grep -c 'ERROR SUMMARY' "$OUT/sanitizer.log") binaries; -lineinfo)"
}

bench_value() {  # bench_value KEY: the value column of KEY in bench.csv
  awk -F, -v k="$1" '$1 == k {print $2; exit}' "$OUT/bench.csv" 2>/dev/null
}

ceilings() {
  local rows=("ceilings: copy" "ceilings: GEMM fp32" "ceilings: GEMM tf32" "ceilings: GEMM bf16")
  gpu_rows 20 90 "${rows[@]}" || return 0
  local t=$T
  log "gpu_bench ceilings (at most ${t}s)"
  timeout "$t" "$BUILD/tools/gpu_bench/hetsgd_gpu_bench" ceilings 670091 128 128 >>"$OUT/bench.csv" 2>>"$OUT/check.log"
  local rc=$?
  row "ceilings: copy" "$(rc_status $rc)" \
    "D2D $(bench_value copy_d2d_read_plus_write) GB/s (read+write), pinned H2D $(bench_value copy_h2d_pinned) / D2H $(bench_value copy_d2h_pinned) GB/s"
  local p
  for p in fp32 tf32 bf16; do
    row "ceilings: GEMM $p" "$(grep -q "^gemm_${p}_.*FAILED" "$OUT/bench.csv" && echo FAILED || echo ok)" \
      "TFLOP/s peak $(bench_value gemm_${p}_peak) (NN 8192^3); model fwd/dW/dX $(bench_value gemm_${p}_model_fwd)/$(bench_value gemm_${p}_model_dw)/$(bench_value gemm_${p}_model_dx) (L $(bench_value model_labels), hidden 128, batch 128)"
  done
}

train_step() {
  local rows=("train_step amazon-670k fp32" "train_step amazon-670k tf32")
  gpu_rows 30 60 "${rows[@]}" || return 0
  local t=$T
  log "gpu_bench train (at most ${t}s)"
  timeout "$t" "$BUILD/tools/gpu_bench/hetsgd_gpu_bench" train 0.02 128 8 >>"$OUT/bench.csv" 2>>"$OUT/check.log"
  local rc=$? m
  for m in fp32 tf32; do
    row "train_step amazon-670k $m" "$(rc_status $rc)" \
      "$(bench_value train_step_${m}_b128) samples/s at batch 128 (Adam); peak GPU memory $(bench_value train_step_${m}_peak_gpu_mem) MiB; last loss $(bench_value train_step_${m}_last_loss)"
  done
}

json_field() {  # json_field FILE MATCH KEY: KEY of the last JSON line of FILE containing MATCH
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
try:
    recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{") and sys.argv[2] in l]
    v = recs[-1].get(sys.argv[3], "-")
    print(f"{v:.4g}" if isinstance(v, float) else v)
except Exception:
    print("-")
PY
}

pytorch() {
  local rows=("pytorch fp32 (same recipe)" "pytorch tf32 (same recipe)")
  gpu_rows 45 90 "${rows[@]}" || return 0
  local t=$T
  log "PyTorch baseline (at most ${t}s)"
  mkdir -p "$SCRATCH"
  "$BUILD/apps/hetsgd" data gen --preset=amazon-670k --scale=0.02 --seed=1 -o "$SCRATCH/amz" \
    >>"$OUT/check.log" 2>&1
  env -u LD_LIBRARY_PATH timeout $((t - 5)) python3 "$ROOT/tools/torch_gpu_baseline.py" \
    --train="$SCRATCH/amz_train.txt" --test="$SCRATCH/amz_test.txt" --time-budget=8 \
    --modes=fp32,tf32 >>"$OUT/runs.jsonl" 2>>"$OUT/check.log"
  local rc=$? m ours theirs
  for m in fp32 tf32; do
    theirs=$(json_field "$OUT/runs.jsonl" "\"pytorch-$m\"" samples_per_s)
    ours=$(bench_value train_step_${m}_b128)
    row "pytorch $m (same recipe)" "$(rc_status $rc)" \
      "$theirs samples/s (GPU-resident batches, Adam lr 5e-4, batch 128); hetsgd/pytorch $(python3 -c "print(f'{float(\"$ours\")/float(\"$theirs\"):.2f}x')" 2>/dev/null || echo -)"
  done
}

adaptive_vs_sync() {
  local sets=("cuda:0,cuda:0" "cuda:0,cuda:0,cuda:0,cuda:0" "cuda:0,cpu:0") devs algo t name
  local names=()
  for devs in "${sets[@]}"; do names+=("adaptive $devs" "sync $devs"); done
  gpu_phase "${names[@]}" || return 0
  for devs in "${sets[@]}"; do
    for algo in adaptive sync; do
      name="$algo $devs"
      phase_time "$name" 20 30 || continue
      t=$T
      log "hetsgd train --devices=$devs --algo=$algo (at most ${t}s)"
      # The model this row names: hidden 128 without dropout and the full softmax on every
      # device (the command line's defaults would shortlist on the CPU above 100,000 labels);
      # evaluation on 2,000 points every 20 rounds, so the rows time training and merging.
      timeout "$t" "$BUILD/apps/hetsgd" train --synthetic=amazon-670k --scale=0.02 --data-seed=1 \
        --devices="$devs" --algo="$algo" --hidden=128 --dropout=0 --output-layer=full \
        --time-budget=8 --eval-every=20 --eval-max-points=2000 --json -q \
        >"$SCRATCH/run.json" 2>>"$OUT/check.log"
      local rc=$?
      python3 - "$SCRATCH/run.json" "$devs" "$OUT/runs.jsonl" <<'PY' >>"$SCRATCH/rows.txt"
import json, sys
try:
    r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
    r["devices_arg"] = sys.argv[2]
    open(sys.argv[3], "a").write(json.dumps(r) + "\n")
    rounds = max(r.get("rounds", 0), 1)
    print(f"{r['samples_per_s']:.0f} samples/s; merge {1000 * r['merge_time_s'] / rounds:.1f} ms/round over {r.get('rounds', 0)} rounds; selected-model test P@1 {r.get('p1', 0):.3f}")
except Exception as e:
    print(f"no result ({type(e).__name__})")
PY
      row "$name" "$(rc_status $rc)" "$(tail -1 "$SCRATCH/rows.txt")"
    done
  done
}

# ---------------------------------------------------------------------------------------------
main() {
  local mode=check
  BUDGET="${HETSGD_CHECK_BUDGET:-}"
  BUILD_CAP="${HETSGD_CHECK_BUILD_CAP:-}"
  JOBS="${HETSGD_CHECK_JOBS:-$(nproc)}"
  ARCHS="${HETSGD_CHECK_ARCHS:-90}"
  local host_deps=0
  while [ $# -gt 0 ]; do
    case "$1" in
      --prepare) prepare; exit $? ;;
      --no-gpu-dry-run) DRY=1 ;;
      --budget|--build-cap|--jobs|--archs)
        [ $# -ge 2 ] || { echo "$1 needs a value" >&2; exit 2; }
        case "$1" in
          --budget) BUDGET="$2" ;;
          --build-cap) BUILD_CAP="$2" ;;
          --jobs) JOBS="$2" ;;
          --archs) ARCHS="$2" ;;
        esac
        if [ "$1" != --archs ] && ! [[ "$2" =~ ^[1-9][0-9]*$ ]]; then
          echo "$1: '$2' is not a positive whole number of ${1#--}" >&2; exit 2
        fi
        shift ;;
      --host-deps) host_deps=1 ;;
      -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
      -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
      *) [ -z "$OUT" ] || { echo "one OUTDIR only ('$OUT', '$1')" >&2; exit 2; }; OUT="$1" ;;
    esac
    shift
  done
  [ -n "$OUT" ] || { echo "usage: $0 [--no-gpu-dry-run] [OPTIONS] OUTDIR (see --help)" >&2; exit 2; }
  BUDGET="${BUDGET:-$([ $DRY -eq 1 ] && echo 2400 || echo 420)}"
  BUILD_CAP="${BUILD_CAP:-$([ $DRY -eq 1 ] && echo 2000 || echo 240)}"
  # The dry run proves the carried set: it re-runs itself in a private mount namespace with the
  # host's copies of the carried packages hidden (root, or an unprivileged user namespace).
  if [ $DRY -eq 1 ] && [ $host_deps -eq 0 ] && [ -z "${HETSGD_CHECK_IN_NAMESPACE:-}" ]; then
    local ns=(unshare -m)
    [ "$(id -u)" -eq 0 ] || ns=(unshare -rm)
    if "${ns[@]}" true 2>/dev/null; then
      HETSGD_CHECK_IN_NAMESPACE=1 exec "${ns[@]}" bash "$0" --no-gpu-dry-run --budget "$BUDGET" \
        --build-cap "$BUILD_CAP" --jobs "$JOBS" --archs "$ARCHS" "$OUT"
    fi
    echo "cannot make a mount namespace (unshare): the host's copies stay visible" >&2
  fi
  DEADLINE=$((START + BUDGET))
  mkdir -p "$OUT" "$SCRATCH" || exit 1
  OUT="$(cd "$OUT" && pwd)"
  rm -f "$OUT"/{env.txt,check.log,build.log,tests.log,sanitizer.log,bench.csv,runs.jsonl,summary.md} "$SCRATCH/rows.txt"
  LOG="$OUT/check.log"
  : >"$LOG"
  trap print_table EXIT
  log "deadline in ${BUDGET}s$([ $DRY -eq 1 ] && echo ' (dry run: no GPU phases)')"
  [ -n "${HETSGD_CHECK_IN_NAMESPACE:-}" ] && hide_host_copies
  environment
  build
  if [ "$DRY" -eq 1 ]; then
    GPU_SKIP="no GPU: dry run"
  elif [ "$BUILT" -ne 1 ]; then
    GPU_SKIP="build failed"
  elif [ "$GPUS" -lt 1 ]; then
    GPU_SKIP="no GPU found by nvidia-smi"
  fi
  tests
  ceilings
  train_step
  pytorch
  adaptive_vs_sync
  sanitizer
  log "done"
  # The exit code: 0 when every phase that ran is ok (skips included), 1 otherwise.
  local r
  for r in "${ROWS[@]}"; do
    case "$r" in *"|failed|"*|*"|FAILED|"*|*"|rc "*) return 1 ;; esac
  done
  return 0
}
main "$@"
