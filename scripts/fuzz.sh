#!/usr/bin/env bash
# Runs the readers' libFuzzer targets (fuzz/) for a number of inputs each, and prints how many
# ran, in how long, and whether any failed. ctest runs it briefly (fuzz_json, fuzz_binary, fuzz_npy,
# fuzz_safetensors, fuzz_idx, fuzz_cli_feed, fuzz_onnx where libonnx-dev is installed).
#
#   scripts/fuzz.sh [--build-dir DIR] [--runs N] [--max-time SECONDS] [--seed S] [--fresh]
#                   [json|binary|npy|safetensors|idx|cli_feed|onnx ...]
#                   [-- LIBFUZZER_FLAGS...]
#
# DIR: a symflow build directory where the fuzz targets were built (default build-fuzz; the fuzzers
# are DIR/fuzz/fuzz_*). N: inputs per fuzzer, seed corpus included (default 1000000). --max-time
# stops a fuzzer earlier (default 0: no cap). --seed fixes libFuzzer's random seed (default: random).
# Inputs that add coverage are kept in DIR/fuzz-work/<format>/corpus for the next run unless --fresh;
# a failing input is written next to it as crash-*, oom-*, timeout-* or leak-*, and the run's log
# as DIR/fuzz-work/<format>/last-run.log. Flags after -- go to every fuzzer (e.g. -len_control=0 to
# try long inputs from the start). One process per fuzzer, one after another: the machines this runs
# on have few cores, shared.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$root/build-fuzz
runs=1000000
max_time=0
seed=0
fresh=0
formats=()
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) build_dir=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --max-time) max_time=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --fresh) fresh=1; shift ;;
    json|binary|npy|safetensors|idx|cli_feed|onnx) formats+=("$1"); shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "fuzz.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
if [ ${#formats[@]} -eq 0 ]; then
  formats=(json binary npy safetensors idx cli_feed)
  [ ! -x "$build_dir/fuzz/fuzz_onnx_import" ] || formats+=(onnx)
fi

# Inputs up to 64 KiB. A single allocation of 16 MiB or more (256 times the largest input; the
# loaders' largest legitimate one is about 1.5 MiB, a node or leaf vector) is reported as a bug: a
# count the file cannot back was trusted. So are 2 GiB of memory in all and 5 s on one input.
limits=(-max_len=65536 -malloc_limit_mb=16 -rss_limit_mb=2048 -timeout=5)

status=0
summary=$(printf '%-11s %11s %8s %8s  %s' format executions seconds exec/s result)
for format in "${formats[@]}"; do
  case $format in
    json) target=fuzz_graph_json dict=graph_json.dict ;;
    binary) target=fuzz_graph_binary dict=graph_binary.dict ;;
    npy) target=fuzz_npy dict=npy.dict ;;
    safetensors) target=fuzz_safetensors dict=safetensors.dict ;;
    idx) target=fuzz_idx dict=idx.dict ;;
    cli_feed) target=fuzz_cli_feed dict=cli_feed.dict ;;
    onnx) target=fuzz_onnx_import dict=onnx.dict ;;
  esac
  fuzzer=$build_dir/fuzz/$target
  if [ ! -x "$fuzzer" ]; then
    echo "fuzz.sh: $fuzzer not found; build it first (ninja -C $build_dir symflow_fuzz_build)" >&2
    exit 2
  fi
  work=$build_dir/fuzz-work/$format
  [ $fresh -eq 0 ] || rm -rf "$work"
  mkdir -p "$work/corpus"
  log=$work/last-run.log
  echo "fuzz.sh: $target, $runs inputs (log: $log)"
  start=$(date +%s%N)
  set +e
  # The first directory receives new inputs; the seed corpus in the tree is only read.
  "$fuzzer" "${limits[@]}" -runs="$runs" -max_total_time="$max_time" -seed="$seed" -print_final_stats=1 \
    -dict="$root/fuzz/$dict" -artifact_prefix="$work/" ${extra[@]+"${extra[@]}"} "$work/corpus" "$root/tests/data/fuzz/$format" >"$log" 2>&1
  rc=$?
  set -e
  tenths=$((($(date +%s%N) - start) / 100000000))
  seconds=$((tenths / 10)).$((tenths % 10))
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  if [ $rc -eq 0 ]; then
    result=ok
  else
    result="FAILED (exit $rc): see $log"
    status=1
    tail -n 60 "$log" >&2
  fi
  summary+=$'\n'$(printf '%-11s %11s %8s %8s  %s' "$format" "${executions:-?}" "$seconds" "${rate:-?}" "$result")
done
echo "$summary"
exit $status
