#!/usr/bin/env bash
# Installs the Debian 12 packages hetsgd builds and runs with, skipping those already present.
# Run as root (or with sudo available). The CUDA toolkit is optional and not installed here.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config
      libtbb-dev libopenblas-dev coinor-libclp-dev libcli11-dev nlohmann-json3-dev libhnswlib-dev
      libgtest-dev libbenchmark-dev python3 python3-matplotlib python3-numpy
      python3-dev python3-scipy python3-pytest python3-tqdm pybind11-dev python3-pybind11
      python3-setuptools python3-wheel python3-pip zlib1g-dev
      libopenmpi-dev openmpi-bin
      time)  # GNU time: the benchmarks' peak RSS of each command (tools/bench_cpu.py)
if [ "${HETSGD_WITH_TORCH:-0}" = 1 ]; then pkgs+=(python3-torch); fi
# The libFuzzer harnesses (tools/run_fuzzers.sh) build with clang and its runtime.
if [ "${HETSGD_WITH_FUZZ:-0}" = 1 ]; then pkgs+=(clang libclang-rt-14-dev); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all packages present"
  exit 0
fi
echo "install_deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" >/dev/null
echo "install_deps: done"
