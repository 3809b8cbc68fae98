"""W1-W4 in PyTorch (eager, torch.compile) and JAX (jit) on the GPU, for docs/benchmarks.md.

W1/W2: elementwise at N = 2^26. W3: loss = sum(log(1 + exp(-y * (w * x + b)))) and its gradients
with respect to w and b at N = 2^26. W4: one SGD step of an MLP 784-1024(relu)-10 with softmax
cross-entropy on integer labels (forward, backward, W -= lr * dW), batch 256 and 4096, FP32 and TF32
matmuls. All float32.

Each timing is the median over `reps` measurements of `inner` back-to-back calls (CUDA events for
PyTorch, wall clock around block_until_ready for JAX), after warm-up. Prints one line per result and
a JSON summary last. `python3 frameworks.py W3 W4` runs only those workloads.
"""
import json
import statistics
import sys
import time

N = 1 << 26
reps, inner = 15, 20
LR = 0.05
BATCHES = (256, 4096)
results = {}
wanted = set(a for a in sys.argv[1:] if a.startswith("W") or a == "CEIL") or {"W1", "W2", "W3", "W4"}


def report(key, value):
    results[key] = value
    print(key, round(value, 4) if isinstance(value, float) else value, flush=True)


def torch_timed(f, warmup=3):
    import torch

    for _ in range(warmup):
        f()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        for _ in range(inner):
            f()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / inner)
    return statistics.median(times)


def jax_timed(f, warmup=3):
    import jax

    for _ in range(warmup):
        jax.block_until_ready(f())
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            r = f()
        jax.block_until_ready(r)
        times.append((time.perf_counter() - t0) * 1e3 / inner)
    return statistics.median(times)


def fresh_compile(f, **options):
    """torch.compile with dynamo's caches cleared: each batch size gets its own static-shape graph
    (a recompile would otherwise switch to dynamic shapes)."""
    import torch

    torch._dynamo.reset()
    return torch.compile(f, **options)


def torch_bench():
    import torch
    import torch.nn.functional as F

    results["torch"] = torch.__version__
    results["device"] = torch.cuda.get_device_name()
    if "CEIL" in wanted:
        # The device's measured ceilings: a large device-to-device copy (bytes read + written) and a
        # large float32 matrix product in FP32 and in TF32.
        global reps, inner
        saved = reps, inner
        reps, inner = 5, 3
        src = torch.rand(1 << 28, device="cuda")
        dst = torch.empty_like(src)
        report("copy TB/s", 2 * src.numel() * 4 / torch_timed(lambda: dst.copy_(src)) / 1e9)
        a, b = torch.rand(8192, 8192, device="cuda"), torch.rand(8192, 8192, device="cuda")
        for tf32 in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            report(f"GEMM 8192^3 {'tf32' if tf32 else 'fp32'} TFLOP/s", 2 * 8192**3 / torch_timed(lambda: a @ b) / 1e9)
        torch.backends.cuda.matmul.allow_tf32 = False
        reps, inner = saved
        del src, dst, a, b
    g = torch.Generator(device="cuda").manual_seed(0)
    if wanted & {"W1", "W2"}:
        a, b, c, d = (torch.rand(N, device="cuda", generator=g) * 2 - 1 for _ in range(4))

    def w1(a, b, c, d):
        return a * b + c * torch.sin(d)

    def w2(a, b, c, d):
        return torch.tanh(a * b + c) * torch.exp(-d * d) + 0.5 * a

    for name, f in (("W1", w1), ("W2", w2)):
        if name not in wanted:
            continue
        report(f"{name} torch eager ms", torch_timed(lambda: f(a, b, c, d)))
        fc = fresh_compile(f)
        report(f"{name} torch.compile ms", torch_timed(lambda: fc(a, b, c, d)))
    if wanted & {"W1", "W2"}:
        del a, b, c, d

    if "W3" in wanted:
        x = torch.rand(N, device="cuda", generator=g) * 4 - 2
        y = torch.rand(N, device="cuda", generator=g) * 2 - 1
        w = (torch.rand(N, device="cuda", generator=g) * 0.4 - 0.2).requires_grad_()
        bias = torch.tensor(0.1, device="cuda").requires_grad_()

        def w3_loss(x, y, w, bias):
            return torch.log(1 + torch.exp(-y * (w * x + bias))).sum()

        def gradients(loss_fn):
            def run():
                w.grad = None
                bias.grad = None
                loss = loss_fn(x, y, w, bias)
                loss.backward()
                return loss
            return run

        report("W3 torch eager ms", torch_timed(gradients(w3_loss)))
        report("W3 torch.compile ms", torch_timed(gradients(fresh_compile(w3_loss)), warmup=5))
        del x, y, w, bias

    if "W4" in wanted:
        for tf32 in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
            precision = "tf32" if tf32 else "fp32"
            for batch in BATCHES:
                xs = torch.rand(batch, 784, device="cuda", generator=g)
                ys = torch.randint(0, 10, (batch,), device="cuda", generator=g)
                params = [
                    ((torch.rand(784, 1024, device="cuda", generator=g) * 2 - 1) / 28).requires_grad_(),
                    ((torch.rand(1024, device="cuda", generator=g) * 2 - 1) / 100).requires_grad_(),
                    ((torch.rand(1024, 10, device="cuda", generator=g) * 2 - 1) / 32).requires_grad_(),
                    ((torch.rand(10, device="cuda", generator=g) * 2 - 1) / 100).requires_grad_(),
                ]

                def mlp_loss(x, y, W1, b1, W2, b2):
                    h = torch.relu(x @ W1 + b1)
                    return F.cross_entropy(h @ W2 + b2, y)

                def step_with(loss_fn):
                    def step():
                        for p in params:
                            p.grad = None
                        loss = loss_fn(xs, ys, *params)
                        loss.backward()
                        with torch.no_grad():
                            torch._foreach_add_(params, [p.grad for p in params], alpha=-LR)
                        return loss
                    return step

                report(f"W4 batch {batch} {precision} torch eager ms", torch_timed(step_with(mlp_loss)))
                report(f"W4 batch {batch} {precision} torch.compile ms",
                       torch_timed(step_with(fresh_compile(mlp_loss)), warmup=5))
                if not tf32:  # the CUDA-graph mode once per batch size is enough (its compile is slow)
                    del xs, ys, params
                    continue
                try:
                    report(f"W4 batch {batch} {precision} torch.compile reduce-overhead ms",
                           torch_timed(step_with(fresh_compile(mlp_loss, mode="reduce-overhead")), warmup=8))
                except Exception as e:  # CUDA-graph mode is optional: keep the other numbers
                    results[f"W4 batch {batch} {precision} reduce-overhead error"] = repr(e)
                del xs, ys, params
        torch.backends.cuda.matmul.allow_tf32 = False


def jax_bench():
    import jax
    import jax.numpy as jnp

    results["jax"] = jax.__version__
    keys = iter(jax.random.split(jax.random.PRNGKey(0), 64))
    if wanted & {"W1", "W2"}:
        a, b, c, d = (jax.random.uniform(next(keys), (N,), jnp.float32, -1.0, 1.0) for _ in range(4))
        w1 = jax.jit(lambda a, b, c, d: a * b + c * jnp.sin(d))
        w2 = jax.jit(lambda a, b, c, d: jnp.tanh(a * b + c) * jnp.exp(-d * d) + 0.5 * a)
        for name, f in (("W1", w1), ("W2", w2)):
            if name in wanted:
                report(f"{name} jax.jit ms", jax_timed(lambda: f(a, b, c, d)))
        del a, b, c, d

    if "W3" in wanted:
        x = jax.random.uniform(next(keys), (N,), jnp.float32, -2.0, 2.0)
        y = jax.random.uniform(next(keys), (N,), jnp.float32, -1.0, 1.0)
        w = jax.random.uniform(next(keys), (N,), jnp.float32, -0.2, 0.2)
        bias = jnp.float32(0.1)

        def w3_loss(w, bias, x, y):
            return jnp.sum(jnp.log(1 + jnp.exp(-y * (w * x + bias))))

        w3 = jax.jit(jax.value_and_grad(w3_loss, argnums=(0, 1)))
        report("W3 jax.jit ms", jax_timed(lambda: w3(w, bias, x, y)))
        del x, y, w

    if "W4" in wanted:
        for precision, name in (("float32", "fp32"), ("tensorfloat32", "tf32")):
            for batch in BATCHES:
                xs = jax.random.uniform(next(keys), (batch, 784), jnp.float32)
                ys = jax.random.randint(next(keys), (batch,), 0, 10)
                params = (
                    jax.random.uniform(next(keys), (784, 1024), jnp.float32, -1 / 28, 1 / 28),
                    jax.random.uniform(next(keys), (1024,), jnp.float32, -0.01, 0.01),
                    jax.random.uniform(next(keys), (1024, 10), jnp.float32, -1 / 32, 1 / 32),
                    jax.random.uniform(next(keys), (10,), jnp.float32, -0.01, 0.01),
                )

                def mlp_loss(params, x, y):
                    W1, b1, W2, b2 = params
                    h = jax.nn.relu(x @ W1 + b1)
                    logits = h @ W2 + b2
                    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

                def sgd(params, x, y):
                    loss, grads = jax.value_and_grad(mlp_loss)(params, x, y)
                    return tuple(p - LR * g for p, g in zip(params, grads)), loss

                with jax.default_matmul_precision(precision):
                    step = jax.jit(sgd, donate_argnums=0)
                    state = {"params": params}

                    def run():
                        state["params"], loss = step(state["params"], xs, ys)
                        return loss

                    report(f"W4 batch {batch} {name} jax.jit ms", jax_timed(run))
                del xs, ys, params, state


for part in (torch_bench, jax_bench):
    try:
        part()
    except Exception as e:  # record the failure, keep the other framework's numbers
        results[part.__name__ + " error"] = repr(e)
        print(part.__name__, "failed:", e, file=sys.stderr, flush=True)
print(json.dumps(results, indent=1))
