#!/usr/bin/env bash
# Regenerates every documentation figure in docs/figures/ as SVG (docs/tutorial.md, "Figures"):
#   mlp_training_graph.svg, mlp_gradient_graph.svg   the MLP's loss graph and its gradient graph
#   cnn_model_graph.svg, cnn_training_graph.svg      the CNN's exported model and its loss graph
#   mlp_curves.svg, cnn_curves.svg                   loss and accuracy from their TensorBoard logs
#   benchmark_ratios.svg                             docs/figures/benchmark_ratios.csv, from docs/benchmarks.md
#
# Needs the built examples and tool (build/examples/mlp, build/examples/cnn, build/tools/symflow:
# docs/tutorial.md), the Fashion-MNIST data set (scripts/install-deps.sh), Graphviz's `dot` and a
# python3 with matplotlib (Debian: graphviz python3-matplotlib; installed with apt-get when run as
# root and missing). Trains the MLP for 10 epochs on the whole data set and the CNN for 3 epochs on
# the first 10 000 training and test images, on one thread: about a minute on 2 cores.
#
#   scripts/figures.sh                  # all figures
#   SYMFLOW_BUILD=other/build scripts/figures.sh
#   SYMFLOW_FIGURE_THREADS=2 scripts/figures.sh
#   SYMFLOW_FIGURE_WORK=run/figures scripts/figures.sh   # keeps the event files, exports, graph and .dot files
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SYMFLOW_BUILD:-$root/build}
threads=${SYMFLOW_FIGURE_THREADS:-1}
out=$root/docs/figures
helper=$root/scripts/figures.py

say() { echo "figures.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# --- what it needs -------------------------------------------------------------------------------
find_python() {
  local p
  for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import matplotlib' >/dev/null 2>&1; then
      command -v "$p"
      return 0
    fi
  done
  return 1
}

missing=()
command -v dot >/dev/null 2>&1 || missing+=(graphviz)
python=$(find_python) || missing+=(python3-matplotlib)
if ((${#missing[@]})); then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    python=$(find_python) || die "python3-matplotlib is installed but no python3 imports matplotlib"
  else
    die "missing: ${missing[*]} (Debian: apt-get install ${missing[*]}, as root)"
  fi
fi

mlp=$build/examples/mlp
cnn=$build/examples/cnn
symflow=$build/tools/symflow
for program in "$mlp" "$cnn" "$symflow"; do
  [[ -x $program ]] || die "no $program: build it first (cmake --build $build --target mlp cnn symflow_cli)"
done

machine="$(nproc)-core $(uname -m) machine"
model=$(LC_ALL=C lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | sed 's/([RTMrtm]*)//g; s/  */ /g' | head -1)
[[ -n $model ]] && machine="$machine ($model)"
today=$(date -u +%F)

if [[ -n ${SYMFLOW_FIGURE_WORK:-} ]]; then  # keep the runs' logs, exports and graph files there
  work=$SYMFLOW_FIGURE_WORK
  rm -rf "$work/mlp" "$work/cnn"
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$out"

event_file() {  # the one event file a fresh --logdir holds
  local files=("$1"/events.out.tfevents.*)
  [[ ${#files[@]} == 1 && -f ${files[0]} ]] || die "expected one event file in $1, found: ${files[*]}"
  echo "${files[0]}"
}

# --- training runs -------------------------------------------------------------------------------
run_example() {  # NAME PROGRAM ARGS...: trains with --logdir and --export under $work/NAME
  local name=$1 program=$2
  shift 2
  say "training: $(basename "$program") $* --threads $threads"
  local status=0
  "$program" "$@" --threads "$threads" --logdir "$work/$name/logs" --export "$work/$name/export" \
    >"$work/$name.out" 2>"$work/$name.err" || status=$?
  if ((status == 77)); then die "$(basename "$program"): no Fashion-MNIST data set (scripts/install-deps.sh installs it)"; fi
  if ((status != 0)); then
    tail -n 5 "$work/$name.err" >&2
    die "$(basename "$program") failed with status $status"
  fi
  tail -n 1 "$work/$name.out" | sed "s/^/  $name: /" >&2
}

mlp_run="10 epochs on all 60 000 training images"
cnn_run="3 epochs on the first 10 000 training and 10 000 test images"
run_example mlp "$mlp" --epochs 10 --log-every 20
run_example cnn "$cnn" --epochs 3 --limit 10000 --log-every 10

# --- graph pictures ------------------------------------------------------------------------------
draw() {  # GRAPH_FILE NAME: docs/figures/NAME.svg by `symflow dot | dot -Tsvg`
  "$symflow" dot "$1" >"$work/$2.dot"
  dot -Tsvg "$work/$2.dot" -o "$out/$2.svg"
  say "wrote docs/figures/$2.svg"
}

# The loss graph each example trains (to_graph(loss), as its event file records it), as a graph file.
for name in mlp cnn; do
  "$python" "$helper" graph "$(event_file "$work/$name/logs")" "$work/$name/training.json" "$work/$name/export/model.json"
  "$symflow" inspect "$work/$name/training.json" >/dev/null  # loads and validates it
done
draw "$work/mlp/training.json" mlp_training_graph
draw "$work/cnn/training.json" cnn_training_graph
draw "$work/cnn/export/model.json" cnn_model_graph  # what --export wrote: the tutorial's picture

# The MLP's gradient graph: the loss and its gradients with respect to the four parameters.
"$symflow" grad "$work/mlp/training.json" --wrt W1 --wrt b1 --wrt W2 --wrt b2 -o "$work/mlp/gradient.json" >/dev/null
"$python" "$helper" dead "$work/mlp/gradient.json"  # differentiate() keeps only what the outputs read
"$symflow" inspect "$work/mlp/gradient.json" >/dev/null
draw "$work/mlp/gradient.json" mlp_gradient_graph

# --- curves ----------------------------------------------------------------------------------------
"$python" "$helper" curves "$out/mlp_curves.svg" \
  "examples/mlp (784-256-10, Adam, batch 128), $mlp_run, $threads thread; $machine, $today" \
  "MLP=$(event_file "$work/mlp/logs")"
say "wrote docs/figures/mlp_curves.svg"
"$python" "$helper" curves "$out/cnn_curves.svg" \
  "examples/cnn (two 5x5 convolutions, dense 1024, dropout 0.5; Adam, batch 64), $cnn_run, $threads thread; $machine, $today" \
  "CNN=$(event_file "$work/cnn/logs")"
say "wrote docs/figures/cnn_curves.svg"

# --- benchmark ratios ------------------------------------------------------------------------------
"$python" "$helper" benchmarks "$out/benchmark_ratios.csv" "$out/benchmark_ratios.svg"
say "wrote docs/figures/benchmark_ratios.svg"

for f in "$out"/*.svg; do
  size=$(stat -c %s "$f")
  ((size < 300000)) || die "$f is $size bytes (keep figures under 300 KB)"
done
