# SPDX-License-Identifier: MIT
"""Build and install npukit's Python package offline:

    pip install --no-build-isolation ./python

(Debian: python3-dev, python3-numpy, python3-setuptools, python3-pip.) The extension module
links the static npukit libraries of a CMake build: $NPUKIT_BUILD_DIR, default ../build; when
they are not built yet this configures and builds them there (cmake, the .ci/packages list)."""

import os
import subprocess

import numpy
from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


BUILD = os.path.abspath(os.environ.get("NPUKIT_BUILD_DIR") or os.path.join(ROOT, "build"))


def npukit_link():
    """The libraries to link, from the CMake build's python/link.txt (cmake/python.cmake)."""
    build = BUILD
    link = os.path.join(build, "python", "link.txt")
    if not os.path.exists(link):
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"])
    subprocess.check_call(["cmake", "--build", build, "--target", "npukit_graph", "npukit_llm", "--parallel"])
    objects, libs, args = [], [], []
    with open(link) as f:
        for line in f:
            item = line.strip()
            if not item:
                continue
            if item.endswith(".a"):
                objects.append(item)
            elif item.startswith("-"):
                args.append(item)  # a link flag (the sanitizer build's -fsanitize=...)
            elif os.path.isabs(item):
                args.append(item)  # a shared library by path
            else:
                libs.append(item)
    # the archives as one group: the linker resolves references among them in any order
    return [], libs, ["-Wl,--start-group"] + objects + ["-Wl,--end-group"] + args


objects, libraries, link_args = npukit_link()
EGG_BASE = os.path.join(BUILD, "python", "egg-info")
os.makedirs(EGG_BASE, exist_ok=True)
ext = Extension(
    "npukit._npukit",
    sources=sorted(os.path.join("src", f) for f in os.listdir(os.path.join(HERE, "src")) if f.endswith(".c")),
    include_dirs=[os.path.join(ROOT, "include"), numpy.get_include()],
    extra_compile_args=["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-D_DEFAULT_SOURCE", "-fvisibility=hidden"],
    extra_objects=objects,
    libraries=libraries,
    extra_link_args=link_args,
)

setup(
    name="npukit",
    version="0.1.0",
    description="npukit: ONNX models on simulated NPUs with ONNX Runtime's API, register-level scripting",
    packages=["npukit"],
    ext_modules=[ext],
    install_requires=["numpy"],
    python_requires=">=3.9",
    # setuptools' intermediate files go to the CMake build directory, not into the source tree
    options={"build": {"build_base": os.path.join(BUILD, "python", "setuptools")},
             "egg_info": {"egg_base": EGG_BASE},
             "build_ext": {"force": True}},  # relink: the libraries may be newer than the cached module
)
