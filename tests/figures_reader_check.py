#!/usr/bin/env python3
"""scripts/figures.py reads TensorBoard event files without TensorFlow; this checks it on a file the
MLP example writes (one epoch on 600 examples, batch 100, a batch value every 2 steps) against what
the run must hold, then on damaged copies of it.

  figures_reader_check.py MLP_PROGRAM WORK_DIR

- the scalars: batch/loss and batch/accuracy at steps 2, 4, 6 (6 steps of 100), the four epoch
  values once at step 6; losses finite and positive, accuracies in [0, 1], the test accuracy the
  one the program printed;
- the graph it logs reads back as a graph file whose leaves are the model's (x, y, W1, b1, W2, b2);
- every damaged copy — a flipped byte in a length, in a CRC, in the data, the file cut short — is
  refused with the file and byte offset named, never read as other values.
"""
import glob
import importlib.util
import math
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_figures():
    spec = importlib.util.spec_from_file_location("figures", os.path.join(ROOT, "scripts", "figures.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(program, work):
    figures = load_figures()
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    logs = os.path.join(work, "logs")
    run = subprocess.run([program, "--epochs", "1", "--limit", "600", "--batch", "100", "--log-every", "2",
                          "--threads", "1", "--logdir", logs], capture_output=True, text=True)
    if run.returncode == 77:
        print("no Fashion-MNIST data set: skipped")
        return 77
    if run.returncode != 0:
        print(run.stdout, run.stderr)
        return 1
    printed = float(re.search(r"test_accuracy=([0-9.]+)", run.stdout).group(1))
    files = glob.glob(os.path.join(logs, "events.out.tfevents.*"))
    assert len(files) == 1, files
    path = files[0]

    series = figures.scalars(path)
    problems = []
    for tag in ("batch/loss", "batch/accuracy"):
        steps = [s for s, _ in series.get(tag, [])]
        if steps != [2, 4, 6]:
            problems.append(f"{tag} at steps {steps}, expected [2, 4, 6]")
    for tag in ("epoch/train_loss", "epoch/train_accuracy", "epoch/test_accuracy"):
        if [s for s, _ in series.get(tag, [])] != [6]:
            problems.append(f"{tag}: {series.get(tag)}, expected one value at step 6")
    for tag, values in series.items():
        for step, v in values:
            if not math.isfinite(v):
                problems.append(f"{tag} at {step} is {v}")
            elif "loss" in tag and v <= 0:
                problems.append(f"{tag} at {step} is {v}, not positive")
            elif "accuracy" in tag and not 0 <= v <= 1:
                problems.append(f"{tag} at {step} is {v}, not in [0, 1]")
    test_accuracy = series.get("epoch/test_accuracy", [(0, -1)])[0][1]
    if abs(test_accuracy - printed) > 5e-5:
        problems.append(f"epoch/test_accuracy {test_accuracy} against the printed {printed}")

    graph = figures.graph_from_event_file(path)
    leaves = sorted(leaf["name"] for kind in ("inputs", "parameters") for leaf in graph[kind])
    if leaves != ["W1", "W2", "b1", "b2", "x", "y"]:
        problems.append(f"the logged graph's leaves are {leaves}")

    with open(path, "rb") as f:
        good = f.read()
    first_length = 0
    second = 8 + 4 + int.from_bytes(good[0:8], "little") + 4  # the second record's first byte
    damaged = {
        "a length byte": (first_length + 2, None),
        "the length's CRC": (9, None),
        "a data byte of a later record": (second + 12 + 3, None),
        "the data's CRC of a later record": (second + 12 + int.from_bytes(good[second:second + 8], "little") + 1, None),
        "the file cut inside a record": (None, len(good) - 3),
    }
    for what, (flip, cut) in damaged.items():
        data = bytearray(good)
        if flip is not None:
            data[flip] ^= 0x40
        if cut is not None:
            data = data[:cut]
        bad = os.path.join(work, "damaged.tfevents")
        with open(bad, "wb") as f:
            f.write(data)
        try:
            figures.scalars(bad)
            problems.append(f"{what}: read without an error")
        except figures.FormatError as e:
            if bad not in str(e) or not re.search(r"\b(offset|byte) \d+", str(e)):
                problems.append(f"{what}: the error does not name the file and offset: {e}")
    for p in problems:
        print(p)
    if not problems:
        print(f"figures.py read {sum(len(v) for v in series.values())} scalars and the graph of {path}, "
              f"and refused {len(damaged)} damaged copies")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
