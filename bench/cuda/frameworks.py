"""W1/W2 at N = 2^26 (float32) in PyTorch (eager, torch.compile) and JAX (jit) on the GPU.

Each timing is the median over `reps` measurements of `inner` back-to-back calls (CUDA events for
PyTorch, wall clock around block_until_ready for JAX), after warm-up. Prints one line per result and
a JSON summary last.
"""
import json
import statistics
import sys
import time

N = 1 << 26
reps, inner = 15, 20
results = {}


def torch_bench():
    import torch

    g = torch.Generator(device="cuda").manual_seed(0)
    a, b, c, d = (torch.rand(N, device="cuda", generator=g) * 2 - 1 for _ in range(4))

    def w1(a, b, c, d):
        return a * b + c * torch.sin(d)

    def w2(a, b, c, d):
        return torch.tanh(a * b + c) * torch.exp(-d * d) + 0.5 * a

    def timed(f):
        for _ in range(3):
            f(a, b, c, d)
        torch.cuda.synchronize()
        times = []
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(reps):
            start.record()
            for _ in range(inner):
                f(a, b, c, d)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) / inner)
        return statistics.median(times)

    results["torch"] = torch.__version__
    results["device"] = torch.cuda.get_device_name()
    for name, f in (("W1", w1), ("W2", w2)):
        results[f"{name} torch eager ms"] = timed(f)
        results[f"{name} torch.compile ms"] = timed(torch.compile(f))
        print(name, "eager", results[f"{name} torch eager ms"], "compile", results[f"{name} torch.compile ms"], flush=True)


def jax_bench():
    import jax
    import jax.numpy as jnp

    k = jax.random.split(jax.random.PRNGKey(0), 4)
    a, b, c, d = (jax.random.uniform(ki, (N,), jnp.float32, -1.0, 1.0) for ki in k)
    w1 = jax.jit(lambda a, b, c, d: a * b + c * jnp.sin(d))
    w2 = jax.jit(lambda a, b, c, d: jnp.tanh(a * b + c) * jnp.exp(-d * d) + 0.5 * a)
    results["jax"] = jax.__version__
    for name, f in (("W1", w1), ("W2", w2)):
        for _ in range(3):
            f(a, b, c, d).block_until_ready()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            for _ in range(inner):
                r = f(a, b, c, d)
            r.block_until_ready()
            times.append((time.perf_counter() - t0) * 1e3 / inner)
        results[f"{name} jax.jit ms"] = statistics.median(times)
        print(name, "jax.jit", results[f"{name} jax.jit ms"], flush=True)


for part in (torch_bench, jax_bench):
    try:
        part()
    except Exception as e:  # record the failure, keep the other framework's numbers
        results[part.__name__ + " error"] = repr(e)
        print(part.__name__, "failed:", e, file=sys.stderr, flush=True)
print(json.dumps(results, indent=1))
