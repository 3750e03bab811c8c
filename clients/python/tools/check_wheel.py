#!/usr/bin/env python3
"""Builds the diffusiond-client wheel offline and checks what it holds; the
ctest python.wheel.

The package is copied to a temporary folder first, because setuptools writes
build/ and *.egg-info next to pyproject.toml. The build uses the installed
setuptools (--no-build-isolation), as a machine without a package index must.
Then the wheel is unpacked alone on sys.path and imported, to show it
carries its generated stubs.
"""

import pathlib
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXPECTED = ["diffusiond_client/__init__.py", "diffusiond_client/aio.py", "diffusiond_client/py.typed",
            "diffusiond_client/_pb/diffusiond/v1/denoise_service_pb2_grpc.py",
            "diffusiond_client/_pb/grpc_health/v1/health_pb2.py"]


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        src, out = pathlib.Path(tmp, "src"), pathlib.Path(tmp, "wheels")
        shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                        "--quiet", str(src), "-w", str(out)], check=True)
        wheels = list(out.glob("diffusiond_client-*.whl"))
        if len(wheels) != 1:
            print(f"expected one wheel, got {[w.name for w in out.iterdir()]}")
            return 1
        names = zipfile.ZipFile(wheels[0]).namelist()
        missing = [n for n in EXPECTED if n not in names]
        stray = [n for n in names if n.split("/")[0] not in ("diffusiond_client",) and ".dist-info/" not in n]
        if missing or stray:
            print(f"{wheels[0].name}: missing {missing}, unexpected {stray}")
            return 1
        unpacked = pathlib.Path(tmp, "site")
        zipfile.ZipFile(wheels[0]).extractall(unpacked)
        probe = ("import sys; sys.path[:0] = [sys.argv[1]]; import diffusiond_client as dc; "
                 "assert dc.__file__.startswith(sys.argv[1]), dc.__file__; print(dc.AsyncClient.__name__)")
        subprocess.run([sys.executable, "-I", "-c", probe, str(unpacked)], check=True, capture_output=True)
        print(f"{wheels[0].name}: {len(names)} files, imports from the wheel alone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
