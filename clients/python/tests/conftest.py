"""Lets `python3 -m pytest clients/python/tests` import the package from this
checkout, as ctest's PYTHONPATH does for the files run one by one; the
environment too, for the tests that start a subprocess."""

import os
import sys

_PACKAGE_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, _PACKAGE_ROOT)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)
