#!/usr/bin/env python3
"""Compile-time, compiler-memory and stack measurements for symflow models.

For each case, compiles one translation unit with g++ (the project's flags: -O2 -march=native
-std=c++20 -fopenmp, include/ and Eigen), one compile at a time under `nice`, with a wall-clock
timeout and a virtual-memory cap (ulimit -v) so a runaway compile cannot take the machine.
Records wall seconds and the compiler's peak RSS (/usr/bin/time -f '%e %M'), the object size, and
for generated MLP programs links and runs them under `ulimit -s 1024` (1 MB stack).

Every case is compiled as the project's targets are: with -DSYMFLOW_SEPARATE_COMPILATION, linked
with what does not depend on the model compiled once (cmake/library/*.cpp: the graph runtime's op
tables, interpreter and runtime programs; the matrix products; update rules, checkpoint, IDX,
TensorBoard and graph JSON files; the library CMake builds as symflow_library). Those compiles are measured too and reported in their own rows: a program pays
them once, like a library it links, not per translation unit.

Cases:
  1 2 4 8 ...        the N-layer LN+GELU MLP training step (bench/compile/gen_mlp.py N)
  f1 f8 ...          its forward pass alone (gen_mlp.py N --kind forward)
  mlp, cnn, ...      examples/<name>.cpp (compiled only, not run: they need data sets)
  path/to/file.cpp   any translation unit (compiled only)

Usage:
  bench/compile/measure.py [cases...] [--timeout 300] [--mem-gb 8] [--no-run] [--write-docs]

Prints a markdown table; --write-docs also puts it between the `<!-- compile-table:begin -->` and
`<!-- compile-table:end -->` markers of docs/benchmarks.md (the section is appended if missing).
Exit status 0 when the script worked, whatever the compiles did (a timeout is a result).
"""
import argparse
import datetime
import os
import platform
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BEGIN, END = "<!-- compile-table:begin -->", "<!-- compile-table:end -->"
DEFAULT_CASES = ["1", "2", "4", "8", "mlp", "cnn"]


def find_eigen():
    for d in ["/usr/include/eigen3", "/usr/local/include/eigen3"]:
        if os.path.isfile(os.path.join(d, "Eigen", "Core")):
            return d
    sys.exit("measure.py: Eigen 3 headers not found (looked in /usr/include/eigen3, /usr/local/include/eigen3)")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def compiler_version(cxx):
    try:
        return subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        return cxx


def limits(mem_bytes, stack_bytes=None, nice=10):
    """preexec_fn: lower priority, cap address space (and stack), own process group."""
    def apply():
        os.setsid()
        try:
            os.nice(nice)
        except OSError:
            pass
        if mem_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
        if stack_bytes:
            resource.setrlimit(resource.RLIMIT_STACK, (stack_bytes, stack_bytes))
    return apply


def session_peak_kb(sid):
    """The largest VmHWM (peak RSS, KB) among the live processes of a session."""
    peak = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[3]) != sid:  # field 6 of stat, the session (`timeout` makes its own group)
                continue
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
        except (OSError, IndexError, ValueError):
            continue
    return peak


class PeakWatcher(threading.Thread):
    """Samples the session's peak RSS every half second: /usr/bin/time cannot report a compiler that
    `timeout` killed (it is reaped by init, not by time's child)."""

    def __init__(self, sid):
        super().__init__(daemon=True)
        self.sid, self.peak_kb, self.stop = sid, 0, threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.peak_kb = max(self.peak_kb, session_peak_kb(self.sid))
            self.stop.wait(0.5)


def run_limited(cmd, timeout, mem_bytes, stack_bytes=None, cwd=None):
    """Runs cmd under /usr/bin/time and `timeout`; returns (rc, seconds, peak_kb, output, timed_out)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time", delete=False) as tf:
        timefile = tf.name
    full = ["/usr/bin/time", "-f", "%e %M", "-o", timefile,
            "timeout", "-k", "10", str(int(timeout))] + cmd
    p = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                         preexec_fn=limits(mem_bytes, stack_bytes), cwd=cwd)
    watcher = PeakWatcher(p.pid)
    watcher.start()
    try:
        out, _ = p.communicate(timeout=timeout + 60)
    except subprocess.TimeoutExpired:  # `timeout` itself stuck: take the whole group down
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
    watcher.stop.set()
    watcher.join()
    rc = p.returncode
    secs, peak = None, None
    try:
        with open(timefile) as f:
            for line in f:
                m = re.match(r"^\s*([\d.]+)\s+(\d+)\s*$", line)
                if m:
                    secs, peak = float(m.group(1)), int(m.group(2))
    finally:
        os.unlink(timefile)
    # /usr/bin/time reports "Command exited with non-zero status N" in the file and exits N.
    timed_out = rc in (124, 137) or (secs is not None and secs >= timeout - 0.5)
    if peak is None or watcher.peak_kb > peak:  # the sampled peak of a killed compiler
        peak = watcher.peak_kb or peak
    return rc, secs, peak, out or "", timed_out


OOM = re.compile(r"out of memory|virtual memory exhausted|std::bad_alloc|Cannot allocate memory|"
                 r"cannot allocate|memory exhausted", re.I)


def classify(rc, out, timed_out, timeout, mem_gb):
    if rc == 0:
        return "ok"
    if timed_out:
        return f"timeout (> {timeout:g} s)"
    if OOM.search(out):
        return f"out of memory (cap {mem_gb:g} GB)"
    if re.search(r"internal compiler error|Segmentation fault|Killed signal", out):
        return "compiler crashed"
    if rc < 0 or rc > 128:
        return f"killed (signal {(-rc) if rc < 0 else rc - 128})"
    return f"compile error (rc {rc})"


def source_for(case, workdir):
    """(label, source path, generated program?) for a case name."""
    if re.fullmatch(r"\d+", case):
        n = int(case)
        src = os.path.join(workdir, f"mlp_ln_gelu_{n}.cpp")
        subprocess.run([sys.executable, os.path.join(HERE, "gen_mlp.py"), str(n), "-o", src], check=True)
        return f"LN+GELU MLP, N={n} (gen_mlp.py {n})", src, True
    if re.fullmatch(r"f\d+", case):
        n = int(case[1:])
        src = os.path.join(workdir, f"mlp_ln_gelu_forward_{n}.cpp")
        subprocess.run([sys.executable, os.path.join(HERE, "gen_mlp.py"), str(n), "--kind", "forward", "-o", src],
                       check=True)
        return f"LN+GELU MLP forward only, N={n} (gen_mlp.py {n} --kind forward)", src, True
    if case.endswith(".cpp"):
        path = case if os.path.isabs(case) else os.path.join(ROOT, case)
        if not os.path.isfile(path) and os.path.isfile(os.path.abspath(case)):
            path = os.path.abspath(case)
        return f"`{os.path.relpath(path, ROOT)}`", path, False
    path = os.path.join(ROOT, "examples", case + ".cpp")
    return f"`examples/{case}.cpp`", path, False


# The units of symflow_library (top-level CMakeLists.txt), each with the options CMake gives it:
# the runtime's units are compiled with -ffp-contract=off, the matrix products with the default.
LIBRARY_PARTS = {
    "op_table": ("runtime op table, once per program (`cmake/library/runtime_op_table.cpp`)",
                 "runtime_op_table.cpp", ["-ffp-contract=off"]),
    "rules": ("derivative rules, first half (`cmake/library/runtime_derivative_rules.cpp`)",
              "runtime_derivative_rules.cpp", ["-ffp-contract=off"]),
    "rules_2": ("derivative rules, second half (`cmake/library/runtime_derivative_rules_2.cpp`)",
                "runtime_derivative_rules_2.cpp", ["-ffp-contract=off"]),
    "interpreter": ("interpreter (`cmake/library/runtime_interpreter.cpp`)", "runtime_interpreter.cpp",
                    ["-ffp-contract=off"]),
    "programs": ("runtime programs, differentiation (`cmake/library/runtime_programs.cpp`)",
                 "runtime_programs.cpp", ["-ffp-contract=off"]),
    "gemm": ("matrix products (`cmake/library/gemm.cpp`)", "gemm.cpp", []),
    "training": ("update rules, checkpoint, IDX, TensorBoard, graph JSON files (`cmake/library/training_and_files.cpp`)",
                 "training_and_files.cpp", []),
}


def measure(case, a, workdir, flags, library=()):
    if case in LIBRARY_PARTS:
        label, name, options = LIBRARY_PARTS[case]
        src, generated = os.path.join(ROOT, "cmake", "library", name), False
        flags = flags + options
    else:
        label, src, generated = source_for(case, workdir)
    row = {"case": label, "result": "", "secs": None, "rss_mb": None, "obj_kb": None, "ran": "n/a"}
    if not os.path.isfile(src):
        row["result"] = "no such file"
        return row
    obj = os.path.join(workdir, os.path.splitext(os.path.basename(src))[0] + ".o")
    cmd = [a.cxx] + flags + ["-c", src, "-o", obj]
    print(f"[measure] {label}: compiling (timeout {a.timeout:g} s, cap {a.mem_gb:g} GB)...", file=sys.stderr, flush=True)
    rc, secs, peak, out, timed_out = run_limited(cmd, a.timeout, int(a.mem_gb * 2**30))
    row["secs"], row["rss_mb"] = secs, (peak / 1024.0 if peak is not None else None)
    row["result"] = classify(rc, out, timed_out, a.timeout, a.mem_gb)
    if a.verbose or row["result"] not in ("ok",) and not timed_out:
        tail = "\n".join(out.strip().splitlines()[-15:])
        if tail:
            print(f"[measure] {label}: compiler output (last lines):\n{tail}", file=sys.stderr)
    if row["result"] != "ok":
        return row
    row["obj_kb"] = os.path.getsize(obj) / 1024.0
    if not generated or a.no_run:
        return row
    exe = obj[:-2]
    link = subprocess.run([a.cxx, obj] + list(library) + ["-o", exe, "-fopenmp", "-ldl", "-lz"],
                          capture_output=True, text=True,
                          preexec_fn=limits(int(a.mem_gb * 2**30)))
    if link.returncode != 0:
        row["ran"] = "no (link failed)"
        print(link.stderr[-2000:], file=sys.stderr)
        return row
    # 1 MB for the main thread (ulimit -s) and for OpenMP's worker threads (OMP_STACKSIZE).
    rc, _, _, out, timed_out = run_limited(["env", "OMP_STACKSIZE=1M", exe], a.run_timeout, 0, stack_bytes=1 << 20)
    print(f"[measure] {label}: run with 1 MB stack: rc {rc}: {out.strip()[-300:]}", file=sys.stderr)
    if rc == 0:
        row["ran"] = "yes"
    elif timed_out:
        row["ran"] = f"no (timeout > {a.run_timeout:g} s)"
    elif rc < 0 or rc > 128:
        sig = -rc if rc < 0 else rc - 128
        row["ran"] = "no (stack overflow, SIGSEGV)" if sig == signal.SIGSEGV else f"no (signal {sig})"
    else:
        row["ran"] = f"no (exit {rc})"
    return row


def fmt(v, spec):
    return "—" if v is None else format(v, spec)


def table(rows):
    lines = ["| case | result | wall s | peak RSS MB | object KB | ran with 1 MB stack |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        # A killed compiler's peak is the largest sampled one: a lower bound.
        rss = ("≥ " if r["rss_mb"] is not None and r["result"] != "ok" else "") + fmt(r["rss_mb"], ".0f")
        lines.append(f"| {r['case']} | {r['result']} | {fmt(r['secs'], '.1f')} | {rss} | "
                     f"{fmt(r['obj_kb'], '.0f')} | {r['ran']} |")
    return "\n".join(lines)


def write_docs(path, section):
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    block = f"{BEGIN}\n{section}\n{END}"
    if BEGIN in text and END in text and text.index(BEGIN) < text.index(END):
        text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n## Compile time of deep models (`bench/compile/measure.py`)\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(text)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*", help=f"cases (default: {' '.join(DEFAULT_CASES)})")
    ap.add_argument("--timeout", type=float, default=300, help="per-compile wall-clock limit, s (default 300)")
    ap.add_argument("--mem-gb", type=float, default=8, help="per-compile virtual-memory cap, GB (default 8)")
    ap.add_argument("--run-timeout", type=float, default=120, help="limit for running a generated program, s")
    ap.add_argument("--no-run", action="store_true", help="do not link and run the generated programs")
    ap.add_argument("--cxx", default=shutil.which("g++-12") or "g++", help="compiler (default g++-12)")
    ap.add_argument("--opt", default="-O2", help="optimisation flag (default -O2)")
    ap.add_argument("--extra", default="", help="extra compiler flags, one string")
    ap.add_argument("--write-docs", nargs="?", const=os.path.join(ROOT, "docs", "benchmarks.md"),
                    help="write the table into the marked section of docs/benchmarks.md (or the given file)")
    ap.add_argument("--keep", help="keep generated sources and objects in this directory")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the compiler's output")
    a = ap.parse_args(argv)
    cases = a.cases or DEFAULT_CASES
    eigen = find_eigen()
    flags = [a.opt, "-march=native", "-std=c++20", "-fopenmp", "-Wall", "-Wextra",
             "-I", os.path.join(ROOT, "include"), "-isystem", eigen,
             f'-DSYMFLOW_EIGEN_INCLUDE_DIR="{eigen}"', "-DSYMFLOW_SEPARATE_COMPILATION"] + a.extra.split()
    workdir = a.keep or tempfile.mkdtemp(prefix="symflow-compile-")
    os.makedirs(workdir, exist_ok=True)
    rows = []
    try:
        library = []
        for part, (_, name, _options) in LIBRARY_PARTS.items():
            part_row = measure(part, a, workdir, flags)
            rows.append(part_row)
            if part_row["result"] == "ok":
                library.append(os.path.join(workdir, os.path.splitext(name)[0] + ".o"))
            print(f"[measure] {part}: {part_row['result']}, {fmt(part_row['secs'], '.1f')} s", file=sys.stderr)
        for case in cases:  # one compile at a time, by design
            rows.append(measure(case, a, workdir, flags, library))
            r = rows[-1]
            print(f"[measure] {r['case']}: {r['result']}, {fmt(r['secs'], '.1f')} s, "
                  f"{fmt(r['rss_mb'], '.0f')} MB, ran: {r['ran']}", file=sys.stderr, flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = "?"
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    header = (f"Measured {when} on {commit or '?'}: {cpu_model()}, {os.cpu_count()} CPUs, "
              f"{compiler_version(a.cxx)}.\n"
              f"Flags: `{' '.join([a.opt, '-march=native -std=c++20 -fopenmp -Wall -Wextra -DSYMFLOW_SEPARATE_COMPILATION'] + a.extra.split())}`, "
              f"one compile at a time, `nice`, timeout {a.timeout:g} s, `ulimit -v` {a.mem_gb:g} GB. "
              f"Generated programs run one training step (batch 256) under `ulimit -s 1024` and `OMP_STACKSIZE=1M`.\n"
              f"Reproduce: `bench/compile/measure.py {' '.join(cases)} --timeout {a.timeout:g} --mem-gb {a.mem_gb:g}`.")
    section = header + "\n\n" + table(rows)
    print(section)
    if a.write_docs:
        write_docs(a.write_docs, section)
        print(f"[measure] wrote {a.write_docs}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
