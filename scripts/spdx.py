#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every source file of npukit names its licence in an SPDX line near its top
(LICENSE: MIT). Source files: C/C++ sources and headers (.c .h .cc .def),
.proto, .py, .sh, .js, CMake (.cmake .cmaketest .cmakescript CMakeLists.txt)
and any other file starting with a #! line, anywhere in the checkout except .git,
build* folders and the fuzz corpora (data).

    scripts/spdx.py [ROOT]          list the files without the line; exit 1 if any
    scripts/spdx.py --fix [ROOT]    add the line where it is missing

The line must be in the first 5 lines (after a #! line, where there is one).
tests/spdx.cmaketest runs the check (and shows it fails on a planted file)."""
import os
import sys

TAG = "SPDX-License-Identifier:"
LICENSE = "MIT"
SLASH = {".c", ".h", ".cc", ".def", ".proto", ".js"}
HASH = {".py", ".sh", ".cmake", ".cmaketest", ".cmakescript"}
SKIP_DIRS = {"corpus", "regressions", "node_modules", "__pycache__", "_CPack_Packages"}


def comment_style(path):
    name = os.path.basename(path)
    ext = os.path.splitext(name)[1]
    if name == "CMakeLists.txt" or ext in HASH:
        return "#"
    if ext in SLASH:
        return "//"
    try:
        with open(path, "rb") as f:
            if f.read(3) == b"#!/":
                return "#"
    except OSError:
        pass
    return None


def skipped_dir(name):
    return name.startswith(".git") or name.startswith("build") or name in SKIP_DIRS


def sources(root):
    """Every source file of the checkout (build folders, .git and fuzz corpora aside)."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(x for x in dirnames if not skipped_dir(x))
        for fn in sorted(filenames):
            p = os.path.join(dirpath, fn)
            if comment_style(p):
                yield p


def has_tag(path):
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        head = [f.readline() for _ in range(6)]
    start = 1 if head and head[0].startswith("#!") else 0
    return any(TAG in line for line in head[start:start + 5])


def fix(path):
    style = comment_style(path)
    with open(path, "r", encoding="utf-8") as f:
        text = f.read()
    line = f"{style} {TAG} {LICENSE}\n"
    if text.startswith("#!"):
        nl = text.index("\n") + 1
        if path.endswith(".js"):
            line = f"// {TAG} {LICENSE}\n"
        text = text[:nl] + line + text[nl:]
    else:
        text = line + text
    mode = os.stat(path).st_mode
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path, mode)


def main(argv):
    do_fix = "--fix" in argv
    args = [a for a in argv if a != "--fix"]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    missing = [p for p in sources(root) if not has_tag(p)]
    if do_fix:
        for p in missing:
            fix(p)
        print(f"added the SPDX line to {len(missing)} files")
        return 0
    for p in missing:
        print(f"{os.path.relpath(p, root)}: no '{TAG} {LICENSE}' line in its first lines "
              f"(scripts/spdx.py --fix adds it)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
