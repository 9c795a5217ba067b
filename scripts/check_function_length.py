#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Rooms a reader can hold (docs/architecture.md, "Function length"): list the
functions of src/ longer than LIMIT lines (default 150, from the line of the
opening brace to the closing one) and fail unless the comment just above each
says why it is long, in a line containing "Why long:".

    check_function_length.py [--limit N] ROOT

Functions are found by a brace scan of each .c file: a '{' at nesting depth 0
whose statement started with something that looks like a declarator opens a
function (struct, union, enum and array initialisers at file scope are
skipped), and its matching '}' closes it. Strings, character constants and
comments are skipped by the scan. Prints "file:line: NAME is N lines ..." per
function over the limit, and exits 1 if any lacks the comment."""
import os
import re
import sys

MARK = "Why long:"


def strip(text):
    """text with comments, strings and character constants blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


FUNC = re.compile(r"([A-Za-z_]\w*)\s*\([^;{}]*\)\s*(?:__attribute__\s*\(\(.*\)\)\s*)?$", re.S)


def functions(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    code = strip(text)
    lines = text.split("\n")
    depth = 0
    stmt_start = 0
    found = []
    i = 0
    cur = None
    for i, c in enumerate(code):
        if c == "{":
            if depth == 0:
                head = code[stmt_start:i]
                m = FUNC.search(head.strip())
                if m and not re.search(r"=\s*$", head) and not re.match(r"\s*(struct|union|enum)\b[^(]*$", head):
                    cur = (m.group(1), code.count("\n", 0, i) + 1)
                else:
                    cur = None
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if cur:
                    end = code.count("\n", 0, i) + 1
                    found.append((cur[0], cur[1], end))
                cur = None
                stmt_start = i + 1
        elif c in ";" and depth == 0:
            stmt_start = i + 1
        elif c == "#" and depth == 0 and (i == 0 or code[i - 1] == "\n"):
            stmt_start = code.find("\n", i) + 1 or i + 1
    return lines, found


def why_comment(lines, brace_line, name):
    """Is there a "Why long:" in the comment block right above the function's signature?"""
    k = brace_line - 1  # 0-based index of the brace line
    # walk up to the line where the signature starts (the line holding the name)
    while k > 0 and name + "(" not in lines[k].replace(" (", "("):
        k -= 1
    k -= 1
    block = []
    while k >= 0 and (lines[k].strip().startswith(("/*", "*", "//")) or lines[k].strip().endswith("*/")):
        block.append(lines[k])
        k -= 1
    return any(MARK in b for b in block)


def main(argv):
    limit = 150
    args = argv[1:]
    if len(args) >= 2 and args[0] == "--limit":
        limit, args = int(args[1]), args[2:]
    if len(args) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = args[0]
    bad = long_ = 0
    for dirpath, _, files in sorted(os.walk(os.path.join(root, "src"))):
        for f in sorted(files):
            if not f.endswith(".c"):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            lines, found = functions(path)
            for name, start, end in found:
                n = end - start + 1
                if n <= limit:
                    continue
                long_ += 1
                ok = why_comment(lines, start, name)
                bad += not ok
                print("%s:%d: %s is %d lines%s" % (rel, start, name, n,
                      "" if ok else " and no comment above it says why (\"%s ...\")" % MARK))
    print("function length: %d function(s) over %d lines in src/, %d without a \"%s\" comment" % (long_, limit, bad, MARK))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
