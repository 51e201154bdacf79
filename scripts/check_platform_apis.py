#!/usr/bin/env python3
"""Fails when Sources/ uses a Linux-only API outside a Linux-only conditional block.

Hearth builds wherever Swift runs (docs/PLATFORMS.md), so `/proc` and `/sys` paths, Glibc,
glibc-only `sysconf` names and Linux system calls may appear only inside `#if os(Linux)` or
`#if canImport(Glibc)` (Swift) or `#if defined(__linux__)` (C) — in the branch the condition
selects, not its `#else`. Comments are not checked. Run from anywhere; CI runs it (.ci/run):

    python3 scripts/check_platform_apis.py [DIR ...]      # default: Sources
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Linux-only APIs: what they match, in code (comments stripped).
LINUX_ONLY = [
    (re.compile(r'"/proc/|"/sys/'), "a /proc or /sys path"),
    (re.compile(r"\bimport\s+Glibc\b|\bGlibc\."), "Glibc"),
    (re.compile(r"\b_SC_(LEVEL\d|AVPHYS_PAGES|NPROCESSORS_CONF|PHYS_PAGES)"), "a glibc-only sysconf name"),
    (re.compile(r"\b(getauxval|sched_[gs]etaffinity|pthread_[gs]etaffinity_np|prctl|memfd_create|gettid|epoll_\w+|"
                r"eventfd|inotify_\w+|MADV_HUGEPAGE|mallinfo2?|malloc_trim)\b"), "a Linux system call or constant"),
]
# A condition that selects Linux: its true branch is Linux-only.
LINUX_CONDITION = re.compile(r"os\(\s*Linux\s*\)|canImport\(\s*Glibc\s*\)|__linux__|__gnu_linux__")
EXTENSIONS = (".swift", ".c", ".h", ".cpp", ".cc")


def strip_comments(line, in_block):
    """The code of a line without // and /* */ comments (string contents kept)."""
    out = []
    i = 0
    in_string = False
    while i < len(line):
        if in_block:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), True
            i = end + 2
            in_block = False
            continue
        ch = line[i]
        if ch == '"' and (i == 0 or line[i - 1] != "\\"):
            in_string = not in_string
        if not in_string and line.startswith("//", i):
            break
        if not in_string and line.startswith("/*", i):
            in_block = True
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out), in_block


def check(path):
    problems = []
    # One entry per open #if: whether the current branch is Linux-only.
    stack = []
    in_block = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, raw in enumerate(f, 1):
            code, in_block = strip_comments(raw.rstrip("\n"), in_block)
            directive = code.strip()
            if re.match(r"#\s*(if|ifdef|ifndef)\b", directive):
                negated = directive.startswith("#ifndef") or "!" in directive
                stack.append(bool(LINUX_CONDITION.search(directive)) and not negated)
                continue
            if re.match(r"#\s*(elseif|elif)\b", directive):
                if stack:
                    stack[-1] = bool(LINUX_CONDITION.search(directive)) and "!" not in directive
                continue
            if re.match(r"#\s*else\b", directive):
                if stack:
                    stack[-1] = False
                continue
            if re.match(r"#\s*endif\b", directive):
                if stack:
                    stack.pop()
                continue
            if any(stack):
                continue
            for pattern, what in LINUX_ONLY:
                if pattern.search(code):
                    problems.append(f"{os.path.relpath(path, ROOT)}:{number}: {what} outside #if os(Linux): {raw.strip()}")
    return problems


def main():
    roots = sys.argv[1:] or [os.path.join(ROOT, "Sources")]
    problems = []
    files = 0
    for root in roots:
        for directory, _, names in os.walk(root):
            for name in sorted(names):
                if name.endswith(EXTENSIONS):
                    files += 1
                    problems += check(os.path.join(directory, name))
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} Linux-only uses outside a Linux-only block (docs/PLATFORMS.md)", file=sys.stderr)
        return 1
    print(f"platform APIs: {files} files, no Linux-only API outside #if os(Linux)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
