#!/usr/bin/env python3
"""Assembles a crawl for the facts benchmark from git mirrors of public repositories.

usage: extract_crawl.py OUT_DIR GIT_DIR...

Every .py file at HEAD of each repository that mentions both "triton" and "jit" is written to
OUT_DIR/<repository>/<path>, where <repository> is the git directory's parent folder name (the
fetch tool's mirrors are /work/.mirror/<owner>+<name>/repo). Prints one line per repository and
a total; bytes are kept exactly as stored (CRLF files stay CRLF).
"""
import os
import subprocess
import sys


def repo_name(git_dir):
    git_dir = os.path.abspath(git_dir.rstrip("/"))
    base = os.path.basename(git_dir)
    return os.path.basename(os.path.dirname(git_dir)) if base in ("repo", ".git") else base


def blobs(git_dir):
    out = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "-z", "HEAD"],
                         check=True, capture_output=True).stdout
    for entry in out.split(b"\0"):
        if not entry:
            continue
        meta, path = entry.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob" and mode != b"120000" and path.endswith(b".py"):
            yield sha.decode(), path.decode("utf-8", "surrogateescape")


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: extract_crawl.py OUT_DIR GIT_DIR...")
    out_dir = sys.argv[1]
    total_files = total_bytes = 0
    for git_dir in sys.argv[2:]:
        name = repo_name(git_dir)
        files = list(blobs(git_dir))
        cat = subprocess.Popen(["git", "--git-dir", git_dir, "cat-file", "--batch"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        kept = size = 0
        for sha, path in files:
            cat.stdin.write(sha.encode() + b"\n")
            cat.stdin.flush()
            header = cat.stdout.readline().split()
            if len(header) < 3:  # "missing": a large file the mirror left out
                continue
            data = cat.stdout.read(int(header[2]))
            cat.stdout.read(1)
            if b"triton" not in data or b"jit" not in data:
                continue
            dest = os.path.join(out_dir, name, path)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "wb") as f:
                f.write(data)
            kept += 1
            size += len(data)
        cat.stdin.close()
        cat.wait()
        print(f"{name}: {kept} files, {size} bytes (of {len(files)} .py files)")
        total_files += kept
        total_bytes += size
    print(f"files={total_files} bytes={total_bytes}")


if __name__ == "__main__":
    main()
