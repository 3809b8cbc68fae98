#!/usr/bin/env python3
"""docs/distributed.md's scaling model: the step time of data-parallel training on N ranks,

    step(N) = fixed + per_example * batch / N + allreduce(N),
    allreduce(N) = 2 (N - 1) / N * bytes / bandwidth + 2 (N - 1) * latency   (a ring all-reduce),

from the inputs measured on one machine (one thread per rank; fixed and per_example from the step
times of one process at two batch sizes). Prints the Markdown table the page holds.

Usage: scaling_model.py   (the inputs are the constants below, with the machine and date they were
measured on: 2-core Intel Xeon VM with AVX-512, g++ 12, 2026-12-02; change them and paste the output into docs/distributed.md)
"""

LATENCY_S = 5e-6  # per message hop of an all-reduce across hosts (typical of TCP/RoCE MPI)
LINKS = {"25 Gb/s": 25e9 / 8, "100 Gb/s": 100e9 / 8}
RANKS = [1, 2, 4, 8, 16, 32]

# name: (step seconds at batch b1, b1, step seconds at batch b2, b2, gradient bytes, global batch)
MODELS = {
    "MLP 784-256-10": (1.22e-3, 128, 0.73e-3, 64, 203530 * 4, 128),
    "CNN (2 conv + 1024 dense)": (145.3e-3, 128, 79.9e-3, 64, 3274634 * 4, 128),
}


def allreduce(n, nbytes, bandwidth):
    return 0.0 if n == 1 else 2 * (n - 1) / n * nbytes / bandwidth + 2 * (n - 1) * LATENCY_S


def main():
    for name, (t1, b1, t2, b2, nbytes, batch) in MODELS.items():
        per_example = (t1 - t2) / (b1 - b2)
        fixed = t1 - per_example * b1
        print(f"**{name}**: {nbytes / 1e6:.2f} MB of gradients per step, global batch {batch}; "
              f"{fixed * 1e3:.3f} ms fixed + {per_example * 1e6:.2f} us per example per step on one thread\n")
        print("| ranks | compute per rank, ms | " + " | ".join(f"all-reduce at {k}, ms | step, ms | speed-up" for k in LINKS) + " |")
        print("|---|---|" + "---|---|---|" * len(LINKS))
        for n in RANKS:
            compute = fixed + per_example * batch / n
            cells = [f"{n}", f"{compute * 1e3:.3f}"]
            for bandwidth in LINKS.values():
                exchange = allreduce(n, nbytes, bandwidth)
                step = compute + exchange
                cells += [f"{exchange * 1e3:.3f}", f"{step * 1e3:.3f}", f"{t1 / step:.2f}"]
            print("| " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main()
