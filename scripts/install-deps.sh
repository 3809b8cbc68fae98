#!/usr/bin/env bash
# Installs the Debian packages symflow's build, tests, benchmarks and examples need, if missing.
set -euo pipefail
packages=(g++ cmake ninja-build pkg-config libeigen3-dev libboost-dev libgtest-dev libgmock-dev libbenchmark-dev
          nlohmann-json3-dev libcli11-dev zlib1g-dev python3 python3-numpy
          python3-protobuf python3-crcmod protobuf-compiler libprotobuf-dev libonnx-dev python3-onnx libonnx-testdata
          libopenmpi-dev openmpi-bin
          clang-14 libclang-rt-14-dev
          dataset-fashion-mnist fortunes)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  echo "symflow: missing Debian packages: ${missing[*]}" >&2
  echo "symflow: run as root, or: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "symflow: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
