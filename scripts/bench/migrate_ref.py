#!/usr/bin/env python3
"""Reference for the migrate benchmark: the same core rewrites as `modelzoo migrate`, done the
way Python porting scripts (e.g. torch_sdaa's cuda_migrate) do them — `re.sub` per file and a
`difflib` unified diff. Dry run only: prints the diff.

usage: migrate_ref.py DIR > diff
"""
import difflib
import os
import re
import sys

SKIP = {".git", "__pycache__", ".venv", "venv", "site-packages"}
RULES = [
    (re.compile(r"\.cuda\("), ".sdaa("),
    (re.compile(r"\btorch\.cuda\b"), "torch.sdaa"),
    (re.compile(r"(['\"])cuda(:[^'\"\n]*)?\1"), r"\1sdaa\2\1"),
    (re.compile(r"(['\"])nccl\1"), r"\1tccl\1"),
    (re.compile(r"\bCUDA_VISIBLE_DEVICES\b"), "SDAA_VISIBLE_DEVICES"),
]
IMPORT = re.compile(r"^(\s*)import torch\b.*$", re.M)

root = sys.argv[1]
scanned = changed = 0
out = sys.stdout
for dirpath, dirnames, filenames in os.walk(root):
    dirnames[:] = sorted(d for d in dirnames if d not in SKIP)
    for name in sorted(filenames):
        if not name.endswith(".py"):
            continue
        path = os.path.join(dirpath, name)
        try:
            text = open(path, encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        scanned += 1
        new = text
        for pattern, repl in RULES:
            new = pattern.sub(repl, new)
        if new != text and "import torch_sdaa" not in new:
            m = IMPORT.search(new)
            if m:
                new = new[: m.end()] + "\n" + m.group(1) + "import torch_sdaa" + new[m.end():]
        if new != text:
            changed += 1
            rel = os.path.relpath(path, root)
            out.writelines(
                difflib.unified_diff(
                    text.splitlines(True), new.splitlines(True), "a/" + rel, "b/" + rel
                )
            )
print(f"{scanned} files scanned, {changed} to change", file=sys.stderr)
