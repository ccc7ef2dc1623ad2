#!/usr/bin/env python3
"""What comes back from the GPU machine: files under $OUT, at most 8 of them,
each at most 16 MiB, 64 MiB in all, no deeper than two folders (the device
tool's limits, /work/.library/device/README.md). The run may be killed at any
moment, so a file in $OUT is only ever replaced whole: written elsewhere
first, then renamed over the old one (rename is atomic on one file system).

A temporary file inside $OUT would, while it exists, be a ninth file and
16 MiB over the total; so the staging folder is beside $OUT, on the same
file system, where one is writable (pick_stage), and only failing that a
"name.tmp" inside $OUT's folder (the rename is still atomic; only a kill in
that instant could leave one file out).

  outbox.py pack REPORT_DIR OUT_FILE     # REPORT_DIR as a .tar.gz, replaced atomically
  outbox.py check OUT_DIR                # the limits, on what is there now
"""
import os
import shutil
import sys
import tarfile
import tempfile

MAX_FILES = 8
MAX_FILE_BYTES = 16 << 20
MAX_TOTAL_BYTES = 64 << 20


def pick_stage(out_root):
    """A fresh folder for staging files bound for out_root: beside it on the
    same file system when possible (then os.replace moves a file in
    atomically), else in the temporary folder (same_fs False: files are
    copied in through a name.tmp). Returns (folder, same_fs)."""
    dev = os.stat(out_root).st_dev
    parent = os.path.dirname(os.path.abspath(out_root))
    for base in (parent, tempfile.gettempdir()):
        try:
            if os.stat(base).st_dev != dev:
                continue
            return tempfile.mkdtemp(prefix=".ndbg-stage-", dir=base), True
        except OSError:
            continue
    return tempfile.mkdtemp(prefix="ndbg-stage-"), False


def place(stage, same_fs, names, dest):
    """Moves stage/NAME to dest/NAME for each of names, in order, each one
    replacing the old file whole; then removes the files in dest that names
    does not list (a checkpoint with fewer shards than the last)."""
    os.makedirs(dest, exist_ok=True)
    for name in names:
        src, dst = os.path.join(stage, name), os.path.join(dest, name)
        if same_fs:
            os.replace(src, dst)
        else:
            shutil.copyfile(src, dst + ".tmp")
            os.replace(dst + ".tmp", dst)
            os.remove(src)
    for name in os.listdir(dest):
        if name not in names and os.path.isfile(os.path.join(dest, name)):
            os.remove(os.path.join(dest, name))


def pack(report_dir, out_file, stage=None, same_fs=None):
    """Writes report_dir's files (not its subfolders' contents beyond one
    level) as out_file, a .tar.gz, replacing it whole."""
    own = stage is None
    if own:
        stage, same_fs = pick_stage(os.path.dirname(os.path.abspath(out_file)))
    try:
        tmp = os.path.join(stage, os.path.basename(out_file))
        with tarfile.open(tmp, "w:gz", compresslevel=6) as tar:
            for root, _dirs, files in sorted(os.walk(report_dir)):
                for f in sorted(files):
                    p = os.path.join(root, f)
                    tar.add(p, arcname=os.path.relpath(p, report_dir))
        if same_fs:
            os.replace(tmp, out_file)
        else:
            shutil.copyfile(tmp, out_file + ".tmp")
            os.replace(out_file + ".tmp", out_file)
            os.remove(tmp)
    finally:
        if own:
            shutil.rmtree(stage, ignore_errors=True)


def check(out_dir, max_files=MAX_FILES, max_file=MAX_FILE_BYTES, max_total=MAX_TOTAL_BYTES):
    """The device tool's limits on out_dir as it is now: a list of problems
    (empty: everything would come back)."""
    problems, files, total = [], 0, 0
    for root, dirs, names in os.walk(out_dir):
        depth = os.path.relpath(root, out_dir).count(os.sep) + (0 if root == out_dir else 1)
        for n in names:
            p = os.path.join(root, n)
            rel = os.path.relpath(p, out_dir)
            files += 1
            size = os.path.getsize(p)
            total += size
            if size > max_file:
                problems.append(f"{rel}: {size:,} bytes (at most {max_file:,})")
            if depth > 2:
                problems.append(f"{rel}: more than two folders down")
            if not all(c.isalnum() or c in "._-" for c in n):
                problems.append(f"{rel}: a name with characters other than letters, digits, '.', '_' and '-'")
    if files > max_files:
        problems.append(f"{files} files (at most {max_files})")
    if total > max_total:
        problems.append(f"{total:,} bytes in all (at most {max_total:,})")
    return problems


def main(argv):
    if len(argv) == 3 and argv[0] == "pack":
        pack(argv[1], argv[2])
        return 0
    if len(argv) == 2 and argv[0] == "check":
        problems = check(argv[1])
        for p in problems:
            print(f"outbox: {p}", file=sys.stderr)
        return 1 if problems else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
