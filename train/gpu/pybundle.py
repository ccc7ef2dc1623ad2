#!/usr/bin/env python3
"""Packs a CPython interpreter into a self-contained archive that runs on
any x86-64 Linux: the GPU machine's own Python is 3.12, which traces
comprehensions differently (PEP 709 inlines them; about one generated
program in five gets other trajectories, train/RESULTS.md), so the data
made there is traced by this carried 3.11, the version the shipped model
and the CPU trainer learned and ndbg is tested with.

  pybundle.py --python PYTHON --out BUNDLE.tar.xz
  pybundle.py --check DIR          # the unpacked bundle runs; prints its version

The archive holds, under py/:
  bin/python3       a /bin/sh wrapper: runs the interpreter through the
                    archive's own dynamic loader with the archive's
                    libraries, so neither the host's C library nor its
                    Python matters (ndbg data --python BUNDLE/bin/python3)
  bin/python3.X     the interpreter
  lib/              its loader, C library and every shared library it and
                    the kept extension modules need (ldd)
  lib/pythonX.Y/    the standard library with its compiled bytecode
                    (mtimes kept, so the .pyc files stay valid), without
                    the test suites, IDLE, tkinter, ensurepip and the
                    other parts a tracer never imports, and without the
                    extension modules that need libraries far larger than
                    themselves (SSL, Tk, curses, readline, NIS, sqlite)

Whether the bundle traces exactly as the interpreter it came from is not
assumed: train/gpu/build.sh compares ndbg data made with both (golden.json)
and run.sh repeats the check on the GPU machine before it uses it.
"""
import argparse
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile

# Parts of the standard library no traced program nor the tracer imports.
SKIP_DIRS = {"test", "tests", "idle_test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data",
             "distutils", "site-packages", "dist-packages", "venv", "__phello__", "asyncio", "email", "multiprocessing",
             "xml", "unittest", "http", "wsgiref", "xmlrpc", "curses", "dbm", "sqlite3"}
SKIP_DIR_PREFIXES = ("config-",)
SKIP_FILES = {"turtle.py"}
# Extension modules left out: they need large libraries (OpenSSL, Tk, ncurses,
# readline, Kerberos, sqlite) or exist only for CPython's own tests. hmac and
# hashlib fall back to the built-in digests without _hashlib.
SKIP_EXT = re.compile(r"^(_tkinter|_test\w*|xx\w*|_xx\w*|_ctypes_test|nis|_curses\w*|readline|ossaudiodev|spwd|_ssl|"
                      r"_hashlib|_sqlite3|_dbm|_gdbm|_crypt|audioop)\b")

PROBE = r"""
import json, os, sys, sysconfig
print(json.dumps({
    "version": sys.version, "version_info": list(sys.version_info[:3]),
    "executable": os.path.realpath(sys.executable),
    "stdlib": sysconfig.get_paths()["stdlib"],
    "dynload": sysconfig.get_config_var("DESTSHARED"),
    "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"),
}))
"""

WRAPPER = """#!/bin/sh
# ndbg's carried CPython (train/gpu/pybundle.py): the interpreter run through
# this bundle's own loader and libraries, so it needs nothing of the host's.
case $0 in */*) d=${0%/*} ;; *) d=. ;; esac
exec "$d/../lib/LOADER" --library-path "$d/../lib" "$d/PYBIN" "$@"
"""


def ldd(path):
    """The shared libraries path needs, as (soname, resolved path), and its
    dynamic loader (None for a static file)."""
    r = subprocess.run(["ldd", path], capture_output=True, text=True)
    libs, loader = [], None
    for line in r.stdout.splitlines():
        line = line.strip()
        m = re.match(r"(\S+) => (\S+) \(0x", line)
        if m:
            if m.group(2) == "not":
                raise RuntimeError(f"{path}: {m.group(1)} not found (ldd)")
            libs.append((m.group(1), m.group(2)))
            continue
        m = re.match(r"(/\S*ld-linux\S*) \(0x", line)
        if m:
            loader = m.group(1)
    return libs, loader


def strip(paths):
    """Drops the symbol tables of the ELF files (the interpreter's shared
    library is 23 MB with them, 4 without), where strip is installed; the
    code is untouched."""
    tool = shutil.which("strip")
    if tool:
        for p in paths:
            os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
            subprocess.run([tool, "--strip-unneeded", p], check=True, capture_output=True)


def copy_tree(src, dst, ext_suffix):
    """The standard library: .py files, their __pycache__ .pyc (no -O
    variants), data files, with mtimes; skipping SKIP_DIRS."""
    n = 0
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(SKIP_DIR_PREFIXES)
                         and not (rel == "." and d == "lib-dynload"))
        for f in sorted(files):
            if f in SKIP_FILES or f.endswith((".exe", ".opt-1.pyc", ".opt-2.pyc")):
                continue
            if f.endswith(".so") and not f.endswith(ext_suffix):
                continue
            s = os.path.join(root, f)
            if not os.path.exists(s):  # a dangling link (Debian's sitecustomize.py points into /etc)
                continue
            d = os.path.join(dst, rel, f)
            os.makedirs(os.path.dirname(d), exist_ok=True)
            shutil.copy2(s, d)
            n += 1
    return n


def build(python, out):
    info = json.loads(subprocess.run([python, "-S", "-c", PROBE], check=True, capture_output=True, text=True).stdout)
    major, minor, _ = info["version_info"]
    ver = f"{major}.{minor}"
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "py")
        bindir, libdir = os.path.join(root, "bin"), os.path.join(root, "lib")
        stdlib = os.path.join(libdir, f"python{ver}")
        os.makedirs(bindir)
        os.makedirs(stdlib)
        pybin = f"python{ver}"
        shutil.copy2(info["executable"], os.path.join(bindir, pybin))
        files = copy_tree(info["stdlib"], stdlib, info["ext_suffix"])
        dyn = os.path.join(stdlib, "lib-dynload")
        os.makedirs(dyn, exist_ok=True)
        kept, skipped = [], []
        needs, loader = ldd(info["executable"])
        if loader is None:
            raise RuntimeError(f"{info['executable']}: no dynamic loader (ldd)")
        for f in sorted(os.listdir(info["dynload"])) if info["dynload"] and os.path.isdir(info["dynload"]) else []:
            if not f.endswith(".so"):
                continue
            if SKIP_EXT.match(f):
                skipped.append(f.split(".")[0])
                continue
            shutil.copy2(os.path.join(info["dynload"], f), os.path.join(dyn, f))
            kept.append(f.split(".")[0])
            needs += ldd(os.path.join(info["dynload"], f))[0]
        libs = {}
        for soname, path in needs:
            libs.setdefault(soname, path)
        libs[os.path.basename(loader)] = loader
        for soname, path in sorted(libs.items()):
            shutil.copy2(os.path.realpath(path), os.path.join(libdir, soname))
        strip([os.path.join(bindir, pybin)] + [os.path.join(libdir, s) for s in libs] +
              [os.path.join(dyn, f) for f in os.listdir(dyn)])
        with open(os.path.join(bindir, "python3"), "w") as f:
            f.write(WRAPPER.replace("LOADER", os.path.basename(loader)).replace("PYBIN", pybin))
        os.chmod(os.path.join(bindir, "python3"), 0o755)
        with open(os.path.join(root, "bundle.json"), "w") as f:
            json.dump({"version": info["version"], "from": info["executable"], "stdlib_files": files,
                       "extensions": kept, "left_out": skipped, "libraries": sorted(libs)}, f, indent=1)
        tmp_out = out + ".tmp"
        # PYBUNDLE_PRESET: xz's level (build.sh --tiny uses 0: seconds instead of a minute).
        with tarfile.open(tmp_out, "w:xz", preset=int(os.environ.get("PYBUNDLE_PRESET", "6"))) as tar:
            tar.add(root, arcname="py", filter=_normalize)
        os.replace(tmp_out, out)
    print(f"{out}: CPython {info['version'].split()[0]} from {info['executable']}, {files} stdlib files, "
          f"{len(kept)} extension modules (left out: {', '.join(skipped) or 'none'}), {len(libs)} libraries, "
          f"{os.path.getsize(out) / 2**20:.1f} MiB")


def _normalize(ti):
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = ""
    return ti


def check(directory):
    """Runs the unpacked bundle's wrapper; returns its version (X.Y.Z)."""
    py = os.path.join(directory, "bin", "python3")
    st = os.stat(py)
    if not st.st_mode & stat.S_IXUSR:
        raise RuntimeError(f"{py} is not executable")
    out = subprocess.run([py, "-S", "-c", "import sys, json, ast, re, resource, hmac; print('%d.%d.%d' % sys.version_info[:3])"],
                         check=True, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"})
    return out.stdout.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", help="the interpreter to pack (default: python3 on PATH, resolved)")
    ap.add_argument("--out", help="the archive to write (.tar.xz)")
    ap.add_argument("--check", metavar="DIR", help="run the unpacked bundle in DIR and print its version")
    args = ap.parse_args()
    if args.check:
        print(check(args.check))
        return 0
    if not args.out:
        ap.error("--out is required")
    build(args.python or shutil.which("python3") or sys.exit("pybundle: no python3 on PATH"), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
