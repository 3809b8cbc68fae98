#!/usr/bin/env python3
"""The same models and training as examples/mlp.cpp, examples/softmax_regression.cpp,
examples/cnn.cpp and examples/char_lm.cpp (--model char_gru or char_transformer), in PyTorch, for the
figures in docs/benchmarks.md: standardised pixels, He-normal / Glorot-uniform weights, zero biases,
Adam (lr 1e-3, cosine decay over the run), batch 128 (64 for the CNN), a fresh shuffle per epoch.

    python3 examples/pytorch_reference.py --model mlp --device cpu --threads 2 --epochs 3
    python3 examples/pytorch_reference.py --model softmax --device cuda
    python3 examples/pytorch_reference.py --model cnn --device cuda --epochs 5
    python3 examples/pytorch_reference.py --model char_gru --threads 2 --steps 2000
    python3 examples/pytorch_reference.py --model char_transformer --threads 2 --steps 2000

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


def read_fortunes(directory, limit):
    """As symflow::read_fortunes: files without an extension in name order, '%' lines made empty."""
    text = bytearray()
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if "." in name or not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")
            if lines and lines[-1] == b"":
                lines.pop()  # the text ended with a newline
            for line in lines:
                text += b"\n" if line == b"%" else line + b"\n"
                if len(text) >= limit:
                    return bytes(text[:limit])
    return bytes(text)


def encode(text):
    """symflow::ascii_vocabulary: ' '..'~' -> 0..94, newline 95, tab 96, anything else 97."""
    codes = np.frombuffer(text, dtype=np.uint8).astype(np.int64)
    ids = np.full(codes.shape, 97, dtype=np.int64)
    printable = (codes >= 32) & (codes <= 126)
    ids[printable] = codes[printable] - 32
    ids[codes == 10] = 95
    ids[codes == 9] = 96
    return ids


def char_gru(args):
    """examples/char_lm.cpp --model gru: embedding 32, GRU 128, dense to 98 logits; windows of 64, batch
    32; Adam 3e-3 with cosine decay, gradients clipped to norm 1."""
    vocabulary, width, hidden, window, batch = 98, 32, 128, 64, 32
    embed = torch.nn.Embedding(vocabulary, width)
    gru = torch.nn.GRU(width, hidden)
    output = torch.nn.Linear(hidden, vocabulary)
    torch.nn.init.xavier_uniform_(output.weight)
    torch.nn.init.zeros_(output.bias)
    loss_fn = torch.nn.CrossEntropyLoss()

    def loss_of(starts, text):
        x = torch.stack([text[s : s + window] for s in starts], 1)          # [window, batch]
        y = torch.stack([text[s + 1 : s + window + 1] for s in starts], 1)  # [window, batch]
        states, _ = gru(embed(x), torch.zeros(1, len(starts), hidden))
        return loss_fn(output(states).reshape(-1, vocabulary), y.reshape(-1))

    parameters = list(embed.parameters()) + list(gru.parameters()) + list(output.parameters())
    train_language_model(args, parameters, loss_of, 3e-3, window, batch)


def char_transformer(args):
    """examples/char_lm.cpp --model transformer: token embedding 128 + learned positions (both N(0, 0.02)),
    two pre-norm blocks (4-head causal self-attention with separate q/k/v projections, GELU MLP 512),
    final layer norm, dense to 98 logits; Linear weights Xavier-uniform, biases zero; windows of 64,
    batch 32; Adam 1e-3 with cosine decay, gradients clipped to norm 1."""
    vocabulary, width, heads, window, batch = 98, 128, 4, 64, 32

    def linear(i, o):
        layer = torch.nn.Linear(i, o)
        torch.nn.init.xavier_uniform_(layer.weight)
        torch.nn.init.zeros_(layer.bias)
        return layer

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
            self.q, self.k, self.v, self.o = (linear(width, width) for _ in range(4))
            self.up, self.down = linear(width, 4 * width), linear(4 * width, width)
            self.register_buffer("mask", torch.ones(window, window, dtype=torch.bool).tril())

        def attention(self, x):
            n, t, c = x.shape
            split = lambda y: y.view(n, t, heads, c // heads).transpose(1, 2)  # [n, heads, t, d]
            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // heads))
            p = torch.softmax(scores.masked_fill(~self.mask[:t, :t], float("-inf")), dim=-1)
            return self.o((p @ v).transpose(1, 2).reshape(n, t, c))

        def forward(self, x):
            h = x + self.attention(self.norm1(x))
            return h + self.down(torch.nn.functional.gelu(self.up(self.norm2(h))))

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(vocabulary, width)
            torch.nn.init.normal_(self.embed.weight, 0, 0.02)
            self.position = torch.nn.Parameter(torch.randn(window, width) * 0.02)
            self.blocks = torch.nn.Sequential(Block(), Block())
            self.norm = torch.nn.LayerNorm(width)
            self.output = linear(width, vocabulary)

        def forward(self, ids):  # [n, window] -> [n, window, vocabulary]
            return self.output(self.norm(self.blocks(self.embed(ids) + self.position)))

    model = Model()

    def loss_of(starts, text):
        x = torch.stack([text[s : s + window] for s in starts])          # [batch, window]
        y = torch.stack([text[s + 1 : s + window + 1] for s in starts])  # [batch, window]
        return torch.nn.functional.cross_entropy(model(x).reshape(-1, vocabulary), y.reshape(-1))

    train_language_model(args, model.parameters(), loss_of, 1e-3, window, batch)


def train_language_model(args, parameters, loss_of, learning_rate, window, batch):
    """The loop both language models share: Adam with cosine decay, clipping to norm 1, held-out bpc
    over non-overlapping windows of the last 5% of the text (at most 64 batches)."""
    ids = encode(read_fortunes(args.data_text, args.limit_bytes))
    split = len(ids) - len(ids) // 20
    train, held_out = torch.from_numpy(ids[:split]), torch.from_numpy(ids[split:])
    parameters = list(parameters)
    optimizer = torch.optim.Adam(parameters, lr=learning_rate)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(args.steps, 1))

    def held_out_bpc():
        with torch.no_grad():
            starts = list(range(0, len(held_out) - window, window))[: 64 * batch]
            starts = starts[: len(starts) // batch * batch]
            nats = sum(loss_of(starts[i : i + batch], held_out).item() for i in range(0, len(starts), batch))
            return nats / (len(starts) // batch) / math.log(2)

    rng = np.random.default_rng(42)
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        loss = loss_of(rng.integers(0, len(train) - window - 1, size=batch), train)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(parameters, 1.0)
        optimizer.step()
        schedule.step()
        if step % args.eval_every == 0 or step == args.steps:
            seconds = time.perf_counter() - start
            print(f"step {step}: training bpc {loss.item() / math.log(2):.4f}, held-out bpc {held_out_bpc():.4f}, "
                  f"{seconds / step * 1000:.1f} ms/step", flush=True)
    print(f"validation_bpc={held_out_bpc():.4f} ms_per_step={(time.perf_counter() - start) / max(args.steps, 1) * 1000:.1f}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["mlp", "softmax", "cnn", "char_gru", "char_transformer"], default="mlp")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: PyTorch's default)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=0, help="0: 128, or 64 for the CNN")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--data-text", default="/usr/share/games/fortunes", help="char_gru, char_transformer: the fortunes directory")
    p.add_argument("--steps", type=int, default=2000, help="char_gru, char_transformer: training steps")
    p.add_argument("--eval-every", type=int, default=250, help="char_gru, char_transformer: steps between held-out evaluations")
    p.add_argument("--limit-bytes", type=int, default=1 << 62, help="char_gru, char_transformer: read at most this much text")
    args = p.parse_args()
    if args.model in ("char_gru", "char_transformer"):
        if args.threads:
            torch.set_num_threads(args.threads)
        torch.manual_seed(42)
        return char_gru(args) if args.model == "char_gru" else char_transformer(args)
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
