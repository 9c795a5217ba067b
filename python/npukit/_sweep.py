# SPDX-License-Identifier: MIT
"""npukit.sweep: `npu sweep` (docs/sweep.md) from Python, returning the CSV's rows.

The sweep engine (spec parsing, worker processes, MPI) is the npu tool's; this runs the tool
(found as $NPU, then `npu` on PATH, then the build tree this package was built in) and reads
its CSV, so the rows are exactly the CSV's."""

import csv
import json
import os
import shutil
import subprocess
import tempfile

from . import _npukit

# workload keys that name files (relative paths are made absolute for a spec given as a dict)
_PATH_KEYS = ("onnx", "layers_csv", "tokenizer")


def _npu():
    p = os.environ.get("NPU") or shutil.which("npu")
    if p:
        return p
    # the build tree: build/python/npukit/ -> build/npu
    cand = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "npu")
    if os.access(cand, os.X_OK):
        return cand
    raise _npukit.NoSuchFile("npukit.sweep needs the npu tool: set NPU or put npu on PATH")


def _absolute(spec):
    def fix(w):
        w = dict(w)
        for k in _PATH_KEYS + (("llm",) if w.get("llm") not in (None, "synthetic") else ()):
            if isinstance(w.get(k), str) and not w[k].startswith("$"):
                w[k] = os.path.abspath(w[k])
        if isinstance(w.get("inputs"), dict):
            w["inputs"] = {n: (p if p.startswith("$") else os.path.abspath(p)) for n, p in w["inputs"].items()}
        return w

    spec = dict(spec)
    if isinstance(spec.get("workloads"), list):
        spec["workloads"] = [fix(w) if isinstance(w, dict) else w for w in spec["workloads"]]
    return spec


def _value(s):
    for conv in (int, float):
        try:
            return conv(s)
        except ValueError:
            pass
    return s


def sweep(spec, jobs=None, timeout=None, host_time=False):
    """Run a design-space sweep: spec is a spec file's path or the spec as a dict (the YAML's
    structure; relative paths relative to the current directory). Returns the CSV's rows as
    dicts in spec order (numbers as int or float, other cells as str, empty cells as None)."""
    with tempfile.TemporaryDirectory() as d:
        if isinstance(spec, dict):
            path = os.path.join(d, "spec.yml")
            with open(path, "w") as f:
                json.dump(_absolute(spec), f)  # JSON is YAML
        else:
            path = os.fspath(spec)
        out = os.path.join(d, "rows.csv")
        cmd = [_npu(), "sweep", path, "-o", out]
        if jobs:
            cmd += ["-j", str(int(jobs))]
        if timeout:
            cmd += ["--timeout", str(int(timeout))]
        if host_time:
            cmd.append("--host-time")
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            msg = r.stderr.strip() or "npu sweep failed (exit %d)" % r.returncode
            raise (_npukit.InvalidArgument if r.returncode == 2 else _npukit.Fail)(msg)
        with open(out, newline="") as f:
            return [{k: (None if v == "" else _value(v)) for k, v in row.items()} for row in csv.DictReader(f)]
