"""setup.py - builds and installs the dirlock Python package: the C
extension dirlock._dirlock over the dirlock library, found with
pkg-config, and the pure-Python dirlock/__init__.py with its type hints.
pyproject.toml names setuptools as the build backend (PEP 517).

    python3 -m pip install ./bindings/python        (from the top of the tree)
    python3 setup.py build_ext --inplace            (make bindings does this)

pip builds in an isolated environment into which it installs setuptools
(and, below setuptools 70.1, wheel); with no package index it takes them
from Debian's python3-setuptools-whl and python3-wheel-whl:

    python3 -m pip install --no-index --find-links /usr/share/python-wheels ./bindings/python

or, under an interpreter that has both (Debian's python3 with
python3-setuptools and python3-wheel), without the isolation:

    python3 -m pip install --no-index --no-build-isolation ./bindings/python

A build here writes nothing into this directory: setuptools' build and
egg-info directories are made in a temporary directory, removed when it
is done (make bindings names its own --build-temp).

pkg-config looks in PKG_CONFIG_PATH as given first, then, when this
directory sits in a built dirlock source tree, in the tree's uninstalled
build/pkgconfig (the top-level `make bindings` makes it), then in the
system's places (after the library's `make install`).  The extension links
the shared library it names, with the runpath its answer gives (the
tree's build directory, or the installed LIBDIR where the dynamic linker
does not look by itself).
"""
import atexit
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
TREE_PC = os.path.join(HERE, "..", "..", "build", "pkgconfig")


def pkg_config(*args):
    env = dict(os.environ)
    if os.path.exists(os.path.join(TREE_PC, "dirlock.pc")):
        env["PKG_CONFIG_PATH"] = os.pathsep.join(
            p for p in (env.get("PKG_CONFIG_PATH"), os.path.normpath(TREE_PC)) if p
        )
    try:
        out = subprocess.run(
            ["pkg-config", *args, "dirlock"], env=env, check=True, capture_output=True, text=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        detail = getattr(e, "stderr", None) or str(e)
        sys.exit(
            f"setup.py: pkg-config {' '.join(args)} dirlock failed: {detail.strip()}\n"
            "Build the library first (make at the top of the dirlock tree), or install it\n"
            "(make install) and point PKG_CONFIG_PATH at its lib/pkgconfig."
        )
    return shlex.split(out)


include_dirs, extra_compile = [], []
for word in pkg_config("--cflags"):
    if word.startswith("-I"):
        include_dirs.append(word[2:])
    else:
        extra_compile.append(word)
libraries, library_dirs, extra_link = [], [], []
for word in pkg_config("--libs"):
    if word.startswith("-l"):
        libraries.append(word[2:])
    elif word.startswith("-L"):
        library_dirs.append(word[2:])
    else:
        extra_link.append(word)
depends = [
    os.path.join(d, h) for d in include_dirs if os.path.isdir(d) for h in os.listdir(d) if h.startswith("dirlock")
    and h.endswith(".h")
]

# What setuptools makes on the way (build/, dirlock.egg-info/), made away
# from the source directory: installing leaves it as it was.
scratch = tempfile.mkdtemp(prefix="dirlock-setup.")
atexit.register(shutil.rmtree, scratch, True)

setup(
    name="dirlock",
    # The library's version (lib/core/dirlock.h, its one home).
    version=pkg_config("--modversion")[0],
    description="Cross-process locks for CGI programs, over the dirlock C library",
    long_description=open(os.path.join(HERE, "README"), encoding="utf-8").read(),
    long_description_content_type="text/plain",
    python_requires=">=3.9",
    packages=["dirlock"],
    package_data={"dirlock": ["__init__.pyi", "py.typed"]},
    ext_modules=[
        Extension(
            "dirlock._dirlock",
            sources=["dirlock/_dirlock.c"],
            include_dirs=include_dirs,
            library_dirs=library_dirs,
            libraries=libraries,
            extra_compile_args=extra_compile + ["-std=c11", "-Wall", "-Wextra", "-Werror"],
            extra_link_args=extra_link,
            depends=depends,
        )
    ],
    zip_safe=False,
    options={"build": {"build_base": scratch}, "egg_info": {"egg_base": scratch}},
)
