#!/usr/bin/env python3
"""Runs mypy --strict (as configured in pyproject.toml) on diffusiond_client;
the ctest python.mypy. Exits 77, which ctest counts as skipped, when this
interpreter has no mypy (Debian: apt install mypy), so a machine without it
still passes while saying why."""

import importlib.util
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main() -> int:
    if importlib.util.find_spec("mypy") is None:
        print("mypy is not installed for this python3 (Debian: apt install mypy); skipped")
        return 77
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                           "--cache-dir", "/dev/null", "-p", "diffusiond_client"], cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())
