#!/usr/bin/env python3
"""The same models and training as examples/mlp.cpp, examples/softmax_regression.cpp and
examples/cnn.cpp, in PyTorch, for the epoch times in docs/benchmarks.md: standardised pixels,
He-normal / Glorot-uniform weights, zero biases, Adam (lr 1e-3, cosine decay over the run), batch 128
(64 for the CNN), a fresh shuffle per epoch.

    python3 examples/pytorch_reference.py --model mlp --device cpu --threads 2 --epochs 3
    python3 examples/pytorch_reference.py --model softmax --device cuda
    python3 examples/pytorch_reference.py --model cnn --device cuda --epochs 5

Prints one line per epoch (training time only, the test pass excluded) and test_accuracy=0.XXXX last.
Needs torch and numpy; reads the IDX files (plain or .gz) itself.
"""
import argparse
import gzip
import math
import os
import struct
import time

import numpy as np
import torch


def read_idx(path):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        data = f.read()
    magic = struct.unpack(">I", data[:4])[0]
    rank = magic & 0xFF
    extents = struct.unpack(">" + "I" * rank, data[4 : 4 + 4 * rank])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(extents)


def load_split(directory, prefix):
    def find(stem):
        plain = os.path.join(directory, stem)
        return plain if os.path.exists(plain) else plain + ".gz"

    images = read_idx(find(prefix + "-images-idx3-ubyte")).reshape(-1, 784).astype(np.float32) / 255.0
    labels = read_idx(find(prefix + "-labels-idx1-ubyte")).astype(np.int64)
    return images, labels


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["mlp", "softmax", "cnn"], default="mlp")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: PyTorch's default)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=0, help="0: 128, or 64 for the CNN")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = p.parse_args()
    if not args.batch:
        args.batch = 64 if args.model == "cnn" else 128
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(42)
    device = torch.device(args.device)

    train_x, train_y = load_split(args.data, "train")
    test_x, test_y = load_split(args.data, "t10k")
    mean, std = train_x.mean(dtype=np.float64), train_x.std(dtype=np.float64)
    train_x = ((train_x - mean) / std).astype(np.float32)
    test_x = ((test_x - mean) / std).astype(np.float32)
    train_x, train_y = torch.from_numpy(train_x).to(device), torch.from_numpy(train_y).to(device)
    test_x, test_y = torch.from_numpy(test_x).to(device), torch.from_numpy(test_y).to(device)

    if args.model == "mlp":
        model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
        torch.nn.init.kaiming_normal_(model[0].weight, nonlinearity="relu")
        torch.nn.init.xavier_uniform_(model[2].weight)
        layers = [model[0], model[2]]
    elif args.model == "cnn":
        # NCHW here; examples/cnn.cpp is NHWC. Same layers, same dropout rate (0.5, training only).
        model = torch.nn.Sequential(
            torch.nn.Unflatten(1, (1, 28, 28)),
            torch.nn.Conv2d(1, 32, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(32, 64, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Flatten(), torch.nn.Linear(3136, 1024), torch.nn.ReLU(), torch.nn.Dropout(0.5),
            torch.nn.Linear(1024, 10))
        for i in (1, 4, 8):
            torch.nn.init.kaiming_normal_(model[i].weight, nonlinearity="relu")
        torch.nn.init.xavier_uniform_(model[11].weight)
        layers = [model[1], model[4], model[8], model[11]]
    else:
        model = torch.nn.Sequential(torch.nn.Linear(784, 10))
        torch.nn.init.xavier_uniform_(model[0].weight)
        layers = [model[0]]
    for layer in layers:
        torch.nn.init.zeros_(layer.bias)
    model.to(device)

    n = train_x.shape[0]
    batches = math.ceil(n / args.batch)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs * batches)
    loss_fn = torch.nn.CrossEntropyLoss()

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    def test_accuracy():
        model.eval()
        with torch.no_grad():
            correct = sum((model(test_x[i : i + 1000]).argmax(1) == test_y[i : i + 1000]).sum().item()
                          for i in range(0, test_x.shape[0], 1000))
        model.train()
        return correct / test_x.shape[0]

    for epoch in range(args.epochs):
        order = torch.randperm(n, device=device)
        sync()
        start = time.perf_counter()
        total_loss = torch.zeros((), device=device)
        correct = torch.zeros((), device=device, dtype=torch.int64)
        for b in range(batches):
            rows = order[b * args.batch : (b + 1) * args.batch]
            x, y = train_x[rows], train_y[rows]
            logits = model(x)
            loss = loss_fn(logits, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            total_loss += loss.detach() * y.shape[0]
            correct += (logits.argmax(1) == y).sum()
        sync()
        seconds = time.perf_counter() - start
        print(
            f"epoch {epoch + 1}: train loss {total_loss.item() / n:.4f}, train accuracy {correct.item() / n:.4f}, "
            f"test accuracy {test_accuracy():.4f}, {seconds:.2f} s, {n / seconds:.0f} examples/s",
            flush=True,
        )
    print(f"test_accuracy={test_accuracy():.4f}")


if __name__ == "__main__":
    main()
