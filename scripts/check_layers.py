#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Layering check (docs/architecture.md, "Layers"): every #include in src/ and
include/ must look down the layer order

    base < abi (src/abi, device ABI) < model (src/sim) < rt (drivers, ports) < ops < graph, llm < tools

and models, ops, graph and llm must not reach a device's model internals.

Usage: check_layers.py [--strict] ROOT [ALLOWLIST]
Prints one "file:line: ..." per forbidden include and exits 1 if any is not
in the allowlist (lines "path include  # owner: reason"). An allowlist entry
that no longer matches anything is reported so that it gets deleted; with
--strict it fails the check too.
"""
import os
import re
import sys

RANK = {"base": 0, "abi": 1, "model": 2, "rt": 3, "ops": 4, "graph": 5, "llm": 5, "tools": 6}

# Public headers by layer (include/npukit/). Device headers follow patterns.
HEADER_LAYER = {
    "error.h": "base", "numfmt.h": "base", "gemm.h": "base", "cpu.h": "base", "tensor.h": "base", "strbuf.h": "base", "range.h": "base",
    "opt.h": "base", "trace.h": "base",
    "regfield.h": "abi", "devices.def": "abi", "pccx_isa.h": "abi", "shell_desc.h": "abi",
    "uapi/npukit_accel.h": "abi",  # the kernel driver's UAPI (kmod/ and the kmd port share it)
    "sim.h": "model",
    "npu.h": "rt", "job.h": "rt", "report.h": "rt", "devtab.h": "rt",
    "e1_lower.h": "ops", "e1_shlo.h": "ops",
    "graph.h": "graph", "llm.h": "llm",
}
DEVICES = ("e1", "v0", "shell", "pccx")
SRC_LAYER = {"base": "base", "abi": "abi", "sim": "model", "rt": "rt", "ops": "ops", "graph": "graph", "llm": "llm",
             "tools": "tools"}

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def header_kind(name):
    """(layer, is_model_api) of include/npukit/NAME, or None if not npukit's."""
    if name in HEADER_LAYER:
        return HEADER_LAYER[name], name in ("sim.h",)
    for d in DEVICES:
        if name in (d + "_regs.def", d + "_regs.h"):
            return "abi", False          # the register and descriptor ABI: models, drivers, compilers share it
        if name == d + "_model.h":
            return "model", True         # the model API
        if name == d + "_drv.h":
            return "rt", False           # the driver API
        if name == d + ".h":
            return "rt", False           # umbrella (ABI + model + driver): users, tools, tests only
    return None


def file_layer(rel):
    parts = rel.split("/")
    if parts[0] == "src" and len(parts) > 2:
        return SRC_LAYER.get(parts[1])
    if parts[0] == "include" and len(parts) > 2 and parts[1] == "npukit":
        k = header_kind("/".join(parts[2:]))
        return k[0] if k else None
    return None


def target_of(rel, inc, root):
    """(layer, description, is_model_internal) of an include, or None (system/generated)."""
    if inc.startswith("npukit/"):
        k = header_kind(inc[len("npukit/"):])
        if not k:
            return None
        return k[0], inc, k[1]
    first = inc.split("/")[0]
    if "/" in inc and first in SRC_LAYER:
        return SRC_LAYER[first], "src/" + inc, first == "sim"
    # relative to the including file's directory
    d = os.path.dirname(rel)
    if os.path.exists(os.path.join(root, d, inc)):
        lay = file_layer(os.path.join(d, inc))
        if lay:
            return lay, os.path.join(d, inc), d == "src/sim"
    return None


def violation(src_layer, rel, tgt):
    layer, what, model_internal = tgt
    if RANK[layer] > RANK[src_layer]:
        return "%s layer includes %s (%s layer): includes only look down" % (src_layer, what, layer)
    if src_layer != layer and RANK[layer] == RANK[src_layer]:
        return "%s layer includes %s (%s layer): graph and llm are siblings" % (src_layer, what, layer)
    if src_layer in ("ops", "graph", "llm") and model_internal:
        return "%s layer includes the model header %s: reach a device through its driver" % (src_layer, what)
    if src_layer == "model" and what.endswith(".h") and "/" in what and what.startswith("npukit/"):
        name = what[len("npukit/"):]
        if name in tuple(d + ".h" for d in DEVICES):
            return "model includes the umbrella %s: include the precise header (_regs.h, _model.h)" % what
    return None


def scan(root):
    found = []
    for top in ("src", "include"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".c", ".h", ".def")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                layer = file_layer(rel)
                if not layer:
                    continue
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        tgt = target_of(rel, m.group(1), root)
                        if not tgt:
                            continue
                        why = violation(layer, rel, tgt)
                        if why:
                            found.append((rel, n, m.group(1), why))
    return found


def main():
    args = sys.argv[1:]
    strict = "--strict" in args
    args = [a for a in args if a != "--strict"]
    if not args:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = args[0]
    allow_path = args[1] if len(args) > 1 else None
    allowed = {}
    if allow_path:
        with open(allow_path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                body = line.split("#", 1)[0].split()
                if body:
                    allowed[(body[0], body[1])] = (n, line.strip())
    found = scan(root)
    bad = 0
    used = set()
    for rel, n, inc, why in found:
        if (rel, inc) in allowed:
            used.add((rel, inc))
            print("%s:%d: allowed for now: %s (%s)" % (rel, n, why, allowed[(rel, inc)][1].split("#", 1)[-1].strip()))
            continue
        print("%s:%d: forbidden include \"%s\": %s" % (rel, n, inc, why))
        bad += 1
    for key, (n, text) in sorted(allowed.items()):
        if key not in used:
            print("%s:%d: stale allowlist entry (the include is gone; delete the line): %s" % (allow_path, n, text))
            bad += strict
    print("layering check: %d forbidden include(s), %d allowed for now" % (bad, len(used)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
