#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""No two files of a layer call each other, directly or around a circle
(docs/architecture.md, "Layers"): read the symbol table of each layer archive,
draw an edge from a member to every member that defines a symbol it uses, and
report every strongly connected set of more than one file.

    check_file_cycles.py [--nm NM] LAYER=ARCHIVE...

Prints one line per cycle (the files in it) and exits 1 if there is any. A
cycle is broken by an interface (a function pointer handed down, as the
executor hands control-flow bodies to the operators in npk_opctx.body), or by
moving the shared part down into a file both use (as the port backends share
src/rt/port.h, the QDQ matcher and the executor src/graph/exec_stage.c)."""
import collections
import subprocess
import sys


def members(nm, archive, *flags):
    out = subprocess.run([nm, "-A", *flags, archive], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 2:
            yield f[0].rsplit(":", 1)[0].split(":", 1)[-1].rstrip(":"), f


def sccs(edges, nodes):
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):  # Tarjan, iterative enough for the few dozen files of a layer
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main(argv):
    nm, args = "nm", argv[1:]
    if len(args) >= 2 and args[0] == "--nm":
        nm, args = args[1], args[2:]
    bad = 0
    for a in args:
        layer, _, path = a.partition("=")
        if not path:
            print(f"check_file_cycles: bad argument '{a}' (expected LAYER=ARCHIVE)")
            return 2
        defined, used, files = {}, collections.defaultdict(set), set()
        for m, f in members(nm, path, "-g", "--defined-only"):
            files.add(m)
            if len(f) >= 3:
                defined.setdefault(f[-1], m)
        for m, f in members(nm, path, "-u"):
            files.add(m)
            used[m].add(f[-1])
        edges = collections.defaultdict(set)
        for m, syms in used.items():
            for s in syms:
                d = defined.get(s)
                if d and d != m:
                    edges[m].add(d)
        for comp in sccs(edges, files):
            print(f"check_file_cycles: {layer}: {' <-> '.join(c.replace('.c.o', '.c') for c in comp)} call each other")
            bad += 1
        print(f"check_file_cycles: {layer}: {len(files)} files, {sum(len(e) for e in edges.values())} dependencies, "
              f"{len(sccs(edges, files))} cycles")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
