#!/usr/bin/env python3
"""The documentation is for users, not a work log: the prose of README.md and docs/*.md (code blocks
and inline code left out) holds no clock times, no load averages, no work sessions, no issue
numbers and no words that date a sentence by when it was written (today, yesterday, ...). Dates of
measurements stay: they say when a figure was true.

  docs_prose.py ROOT          check the repository at ROOT; prints FILE:LINE: what, and fails
  docs_prose.py --self-test   plant one of each in a scratch page and expect each to be found
"""
import glob
import os
import re
import sys
import tempfile

RULES = [
    ("a clock time", re.compile(r"(?<![\w.:/-])([01]?\d|2[0-3]):[0-5]\d(:[0-5]\d)?(?![\w:])")),
    ("a load average", re.compile(r"\bload[ -]averages?\b", re.I)),
    ("a work session", re.compile(r"\bsessions?\b", re.I)),
    ("an issue number", re.compile(r"\bissues? #?\d+\b", re.I)),
    ("a word that dates the sentence", re.compile(r"\b(today|yesterday|tonight|this morning|last night)\b", re.I)),
]
INLINE_CODE = re.compile(r"`[^`]*`")
LINK_TARGET = re.compile(r"\]\([^)]*\)")


def pages(root):
    return [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))


def problems_in(path, shown_as):
    found, in_code = [], False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.lstrip().startswith("```"):
                in_code = not in_code
                continue
            if in_code:
                continue
            prose = LINK_TARGET.sub("]()", INLINE_CODE.sub("``", line))
            for what, pattern in RULES:
                m = pattern.search(prose)
                if m:
                    found.append(f"{shown_as}:{number}: {what} ({m.group(0)!r}): {line.strip()[:120]}")
    return found


def check(root):
    found = []
    for path in pages(root):
        found += problems_in(path, os.path.relpath(path, root))
    return found


def self_test():
    planted = {
        "a clock time": "Measured 2026-11-22 23:10 on two cores.",
        "a load average": "The load average was 3.1.",
        "a work session": "This session added the option.",
        "an issue number": "Finished in issue 15.",
        "a word that dates the sentence": "Today the interpreter is faster.",
    }
    clean = "A 2:1 ratio is no clock, nor is `12:30` in code, nor 1.5:1, nor a date 2026-11-22.\n"
    with tempfile.TemporaryDirectory() as scratch:
        os.makedirs(os.path.join(scratch, "docs"))
        with open(os.path.join(scratch, "README.md"), "w", encoding="utf-8") as f:
            f.write(clean + "```sh\necho 10:30 session\n```\n")
        with open(os.path.join(scratch, "docs", "page.md"), "w", encoding="utf-8") as f:
            f.write("".join(text + "\n" for text in planted.values()))
        found = check(scratch)
    missing = [what for what in planted if not any(f": {what} (" in p for p in found)]
    if missing or len(found) != len(planted):
        print("self-test: expected one problem per planted line; missing: " + ", ".join(missing) +
              "\nfound:\n  " + "\n  ".join(found))
        return 1
    print(f"self-test: the {len(planted)} planted problems were found and nothing else")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__)
        return 2
    found = check(argv[1])
    for p in found:
        print(p)
    if not found:
        print("docs_prose: no clock times, load averages, sessions, issue numbers or dating words in the docs' prose")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
