#!/usr/bin/env python3
"""The concept pages' code is the tests' code: every C++ block of a page that follows a line

    <!-- tested: tests/FILE.cpp#NAME -->

must be, line for line (after removing the common indentation), the region of FILE.cpp between
`// [docs:NAME]` and `// [docs:end]`, which a test program runs and checks. Fails naming the page,
the block and the first line that differs; also fails on a region no page shows, a marker with no
block under it, or a page of the list below without any tested block.

  docs_snippets.py ROOT            check the repository at ROOT
  docs_snippets.py --self-test     plant a mismatch, a missing region and an unshown region in a
                                   scratch copy and expect exactly those three to be reported
"""
import os
import re
import shutil
import sys
import tempfile
import textwrap

# Pages whose code must all be tested this way.
CONCEPT_PAGES = ["docs/tensors.md", "docs/evaluation.md", "docs/gradients.md"]

MARKER = re.compile(r"^<!-- tested: (tests/[A-Za-z0-9_./-]+\.cpp)#([a-z0-9-]+) -->\s*$")
REGION_START = re.compile(r"^\s*// \[docs:([a-z0-9-]+)\]\s*$")
REGION_END = re.compile(r"^\s*// \[docs:end\]\s*$")


def regions(path):
    """NAME -> list of lines (dedented), for every region of a test file."""
    found, name, lines = {}, None, []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            end = REGION_END.match(line)
            start = None if end else REGION_START.match(line)
            if start:
                if name is not None:
                    raise ValueError(f"{path}:{number}: region {start.group(1)} starts inside region {name}")
                name, lines = start.group(1), []
            elif end:
                if name is None:
                    raise ValueError(f"{path}:{number}: [docs:end] outside a region")
                if name in found:
                    raise ValueError(f"{path}:{number}: region {name} appears twice")
                found[name] = textwrap.dedent("\n".join(lines)).split("\n")
                name = None
            elif name is not None:
                lines.append(line)
    if name is not None:
        raise ValueError(f"{path}: region {name} has no [docs:end]")
    return found


def tested_blocks(page):
    """(line number, test file, region name, block lines) for every marked block of a page."""
    with open(page, encoding="utf-8") as f:
        text = f.read().split("\n")
    blocks, i = [], 0
    while i < len(text):
        m = MARKER.match(text[i])
        if m:
            if i + 1 >= len(text) or text[i + 1].strip() != "```cpp":
                blocks.append((i + 1, m.group(1), m.group(2), None))
                i += 1
                continue
            j = i + 2
            while j < len(text) and text[j].strip() != "```":
                j += 1
            blocks.append((i + 1, m.group(1), m.group(2), textwrap.dedent("\n".join(text[i + 2:j])).split("\n")))
            i = j
        i += 1
    return blocks


def check(root):
    problems, shown = [], {}
    cache = {}
    for page in CONCEPT_PAGES:
        path = os.path.join(root, page)
        if not os.path.exists(path):
            problems.append(f"{page}: missing")
            continue
        blocks = tested_blocks(path)
        if not blocks:
            problems.append(f"{page}: no tested C++ block")
        for line, test_file, name, block in blocks:
            where = f"{page}:{line}"
            if block is None:
                problems.append(f"{where}: the marker for {name} is not followed by a ```cpp block")
                continue
            if test_file not in cache:
                test_path = os.path.join(root, test_file)
                try:
                    cache[test_file] = regions(test_path)
                except (OSError, ValueError) as e:
                    problems.append(f"{where}: {e}")
                    cache[test_file] = {}
            region = cache[test_file].get(name)
            shown.setdefault(test_file, set()).add(name)
            if region is None:
                problems.append(f"{where}: {test_file} has no region [docs:{name}]")
                continue
            if block != region:
                k = next((k for k in range(max(len(block), len(region)))
                          if k >= len(block) or k >= len(region) or block[k] != region[k]), 0)
                page_line = block[k] if k < len(block) else "(block ends)"
                test_line = region[k] if k < len(region) else "(region ends)"
                problems.append(f"{where}: block {name} differs from {test_file} at its line {k + 1}:\n"
                                f"    page: {page_line}\n    test: {test_line}")
    for test_file, names in cache.items():
        for name in sorted(set(names) - shown.get(test_file, set())):
            problems.append(f"{test_file}: region [docs:{name}] is shown by no page")
    return problems


def self_test():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    scratch = tempfile.mkdtemp()
    try:
        for page in CONCEPT_PAGES + ["tests/docs_concepts_test.cpp"]:
            os.makedirs(os.path.dirname(os.path.join(scratch, page)), exist_ok=True)
            shutil.copy(os.path.join(root, page), os.path.join(scratch, page))
        clean = check(scratch)
        if clean:
            print("self-test: the repository's own pages do not pass:\n" + "\n".join(clean))
            return 1
        test_path = os.path.join(scratch, "tests/docs_concepts_test.cpp")
        with open(test_path, encoding="utf-8") as f:
            source = f.read()
        names = re.findall(r"// \[docs:([a-z0-9-]+)\]", source)
        names = [n for n in names if n != "end"]
        # 1: a changed line in the first region; 2: the second region renamed (missing for its page,
        # and the new name shown by no page).
        first_start = source.index(f"// [docs:{names[0]}]")
        first_line_end = source.index("\n", source.index("\n", first_start) + 1)
        source = source[:first_line_end] + "  // planted" + source[first_line_end:]
        source = source.replace(f"// [docs:{names[1]}]", "// [docs:planted-unshown]")
        with open(test_path, "w", encoding="utf-8") as f:
            f.write(source)
        found = check(scratch)
        expected = [f"differs from tests/docs_concepts_test.cpp", f"has no region [docs:{names[1]}]",
                    "region [docs:planted-unshown] is shown by no page"]
        missing = [e for e in expected if not any(e in p for p in found)]
        if missing or len(found) != 3:
            print("self-test: expected exactly these three problems:\n  " + "\n  ".join(expected) +
                  "\nfound:\n  " + "\n  ".join(found))
            return 1
        print("self-test: the three planted problems were found")
        return 0
    finally:
        shutil.rmtree(scratch)


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__)
        return 2
    problems = check(argv[1])
    for p in problems:
        print(p)
    if not problems:
        print(f"docs_snippets: every tested block of {', '.join(CONCEPT_PAGES)} matches its test region")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
