#!/usr/bin/env python3
"""Folders are layers; includes point down.

Reads every header under include/symflow/ and cuda/include/symflow/ and fails, naming the file, the
line and both layers, on an #include of a header in a higher layer. The layers, lowest first (a
folder may include its own layer and any below it):

  core -> expr -> ops -> symbolic -> ir -> io -> eval -> runtime -> cuda -> debug -> data -> train -> nn
  -> distributed

(the order of ../shared/ARCHITECTURE.md; data/ holds the dataset readers training uses; nn/, the layer
objects and the training step, stands on train/; distributed/, data-parallel training over MPI, on
all of them)

symflow.hpp, the *_definitions.hpp recipes and graph/ (the graph value's umbrella header and the
former paths of moved headers, each forwarding to the new one) sit above them all: nothing in a
layer may include them. A folder missing from LAYERS, or a header in none of them, is an error too,
so that a new folder gets a place on purpose.

Usage: include_layers.py REPOSITORY_ROOT
       include_layers.py --self-test   (the check finds planted upward includes, and only those)
"""
import pathlib
import re
import sys
import tempfile

LAYERS = ["core", "expr", "ops", "symbolic", "ir", "io", "eval", "runtime", "cuda", "debug", "data", "train", "nn",
          "distributed"]
TOP = len(LAYERS)  # the umbrella headers, the separate-compilation recipes and former paths
ABOVE_ALL = ["graph"]
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_of(relative):
    """relative: a path under symflow/ (e.g. 'ops/add.hpp'); returns (rank, name) or None."""
    parts = relative.parts
    if len(parts) == 1:
        return (TOP, "top") if parts[0].endswith(".hpp") else None
    if parts[0] in ABOVE_ALL:
        return TOP, parts[0]
    if parts[0] in LAYERS:
        return LAYERS.index(parts[0]), parts[0]
    return None


def main(root):
    roots = [root / "include" / "symflow", root / "cuda" / "include" / "symflow"]
    problems = []
    headers = 0
    for base in roots:
        for header in sorted(base.rglob("*.hpp")):
            headers += 1
            here = layer_of(header.relative_to(base))
            if here is None:
                problems.append(f"{header.relative_to(root)}: in no layer (add its folder to LAYERS in {__file__})")
                continue
            for number, line in enumerate(header.read_text(encoding="utf-8").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                kind, name = m.groups()
                if kind == '"':
                    target = (header.parent / name).resolve()
                else:
                    if not name.startswith("symflow/"):
                        continue  # a system or third-party header
                    target = None
                    for b in roots:
                        candidate = (b.parent / name).resolve()
                        if candidate.exists():
                            target = candidate
                            break
                    if target is None:
                        problems.append(f"{header.relative_to(root)}:{number}: includes {name}, which does not exist")
                        continue
                owner = next((b for b in roots if target.is_relative_to(b.resolve())), None)
                if owner is None:
                    continue  # outside symflow's headers (an Eigen or system header by a relative path)
                there = layer_of(target.relative_to(owner.resolve()))
                if there is None:
                    problems.append(f"{header.relative_to(root)}:{number}: includes {name}, which is in no layer")
                elif there[0] > here[0]:
                    problems.append(f"{header.relative_to(root)}:{number}: {here[1]} includes {name} from {there[1]}, "
                                    f"a higher layer")
    if headers == 0:
        problems.append(f"no headers found under {root}")
    for p in problems:
        print(p)
    print(f"{headers} headers, {len(problems)} problems (layers: {' -> '.join(LAYERS)})")
    return 1 if problems else 0


def self_test():
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        files = {
            "include/symflow/core/a.hpp": '#include "../ops/b.hpp"\n',          # up: core -> ops
            "include/symflow/ops/b.hpp": '#include "../core/a.hpp"\n#include <vector>\n',  # down
            "include/symflow/train/c.hpp": '#include <symflow/cuda/d.hpp>\n',   # down, across roots
            "cuda/include/symflow/cuda/d.hpp": '#include <symflow/train/c.hpp>\n',  # up: cuda -> train
            "include/symflow/symflow.hpp": '#include "train/c.hpp"\n',           # the umbrella
        }
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        status = main(root)
        ok = status == 1
        # exactly the two planted problems
        import io, contextlib
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main(root)
        ok = ok and "2 problems" in out.getvalue() and "core/a.hpp:1" in out.getvalue() and "cuda/d.hpp:1" in out.getvalue()
    print("self-test", "passed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--self-test":
        sys.exit(self_test())
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()))
