"""What a benchmark result was measured on: the commit, and whether the tree had local changes."""

import subprocess


def commit_note() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--short", "--untracked-files=no"], capture_output=True, text=True).stdout
    return f"commit {head}" + (" + local changes" if dirty.strip() else "")
