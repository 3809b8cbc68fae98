#!/usr/bin/env python3
"""bench/bench_training's steps in PyTorch, for same-machine ratios in docs/benchmarks.md: one SGD step
(lr 0.05) of W4 (MLP 784-1024(relu)-10) and of the examples' MLP (784-256(relu)-10) with softmax
cross-entropy on integer labels at batch 1, 16 and 256 (128 for the MLP), and one Adam step of the
examples' CNN (examples/cnn.cpp's layers, batch 64), on random data.

    python3 bench/torch_training.py --threads 2            # Debian's python3-torch (/usr/bin/python3)

Prints one line per step: name, median milliseconds over --repetitions timed runs of --steps steps.
"""
import argparse
import statistics
import time

import torch


def mlp(hidden):
    return torch.nn.Sequential(torch.nn.Linear(784, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10))


def cnn():
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(3136, 1024), torch.nn.ReLU(), torch.nn.Dropout(0.5),
        torch.nn.Linear(1024, 10))


def time_steps(model, optimizer, x, y, steps, repetitions):
    loss_of = torch.nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_of(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(3):
        step()
    times = []
    for _ in range(repetitions):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        times.append((time.perf_counter() - start) / steps * 1e3)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repetitions", type=int, default=7)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(7)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for name, hidden, batches in (("W4", 1024, (1, 16, 256)), ("MLP256", 256, (1, 16, 128))):
        for batch in batches:
            model = mlp(hidden)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
            x = torch.rand(batch, 784)
            y = torch.randint(0, 10, (batch,))
            ms = time_steps(model, optimizer, x, y, args.steps, args.repetitions)
            print(f"{name}/{batch} {ms:.4f} ms")
    model = cnn()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(64, 1, 28, 28)
    y = torch.randint(0, 10, (64,))
    ms = time_steps(model, optimizer, x, y, max(2, args.steps // 4), args.repetitions)
    print(f"CNN/64 {ms:.4f} ms")


if __name__ == "__main__":
    main()
