#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Layers only look down, read from the symbol tables of the layer archives
(docs/architecture.md "Layers"): every undefined symbol of a layer's archive
that another npukit layer defines must be defined by a layer it may use.

    check_symbols.py [--nm NM] LAYER=ARCHIVE...

The layer order is base < abi < sim < rt < ops < graph, llm. A layer may use
the layers below it, except that ops, graph and llm never use sim: the device
models are reached through the drivers (rt), and what models, drivers and
compilers share (descriptor and instruction codecs, register ABI) is abi.
The link of layer_link_<layer> (CMakeLists.txt) already refuses a call up the
order; this check also refuses the skip past the drivers into the models.
Prints one line per offending use (archive member, symbol, defining layer)
and exits 1 if there is any; tests/layering_symbols_planted.cmaketest plants
one and expects the failure."""
import subprocess
import sys

ORDER = ["base", "abi", "sim", "rt", "ops", "graph", "llm"]
MAY_USE = {
    "base": set(),
    "abi": {"base"},
    "sim": {"base", "abi"},
    "rt": {"base", "abi", "sim"},
    "ops": {"base", "abi", "rt"},
    "graph": {"base", "abi", "rt", "ops"},
    "llm": {"base", "abi", "rt", "ops"},
}


def nm_lines(nm, archive, *flags):
    out = subprocess.run([nm, "-A", *flags, archive], check=True, capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.strip()]


def main(argv):
    nm = "nm"
    args = argv[1:]
    if len(args) >= 2 and args[0] == "--nm":
        nm, args = args[1], args[2:]
    archives = {}
    for a in args:
        layer, _, path = a.partition("=")
        if layer not in MAY_USE or not path:
            print(f"check_symbols: bad argument '{a}' (expected LAYER=ARCHIVE, LAYER one of {', '.join(ORDER)})")
            return 2
        archives[layer] = path
    defined = {}  # symbol -> layer
    for layer, path in archives.items():
        for line in nm_lines(nm, path, "-g", "--defined-only"):
            f = line.split()
            if len(f) >= 3 and f[-2] not in ("U", "w", "v"):
                defined.setdefault(f[-1], layer)
    bad = 0
    for layer, path in archives.items():
        for line in nm_lines(nm, path, "-u"):
            f = line.split()
            sym, member = f[-1], f[0].rsplit(":", 1)[0]
            d = defined.get(sym)
            if d and d != layer and d not in MAY_USE[layer]:
                print(f"check_symbols: {member} ({layer}) uses {sym}, defined in layer {d}: "
                      f"{layer} may use only {', '.join(sorted(MAY_USE[layer], key=ORDER.index)) or 'the C library'}")
                bad += 1
    n_und = sum(len(nm_lines(nm, p, "-u")) for p in archives.values())
    print(f"check_symbols: {len(archives)} archives, {len(defined)} defined symbols, {n_und} undefined references, "
          f"{bad} against the layer order")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
