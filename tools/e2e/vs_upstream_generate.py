#!/usr/bin/env python3
"""Runs the daemon's Generate on the cases of e2e_pipe_refgen.py's output and
compares each image with upstream's own pipeline __call__ image, level by
level in 8 bits.

e2e_pipe_refgen.py (the shared reference generators) writes, per family,
OUT/<family>-pipe/ with a tiny pipeline folder (pipe/), cases.json (one
upstream __call__ per case: prompt, negative prompt, size, steps, seed, the
guidance upstream got and the daemon's reading of it, true_cfg_scale) and
ref.safetensors (<case>.image_u8, [H, W, 3]). This script starts a daemon
over each folder with FP8 off (the references are float32), asks it for
every case through the Python client, and prints a table of the largest
level difference and how many values differ. It exits 1 when a case is over
--max_levels (default 1: the noise floor of float32 across BLAS kernels).

Usage: vs_upstream_generate.py --daemon build/release/server/diffusiond
           --refs OUT [--family flux] [--case flux-truecfg] [--max_levels 1]
"""
import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
import diffusiond_client as dc  # noqa: E402


def read_safetensors_u8(path, key):
    """The bytes and shape of U8 tensor `key` of a safetensors file."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        entry = header[key]
        if entry["dtype"] != "U8":
            raise ValueError(f"{key} is {entry['dtype']}, expected U8")
        begin, end = entry["data_offsets"]
        f.seek(8 + n + begin)
        return f.read(end - begin), entry["shape"]


def decode_png_rgb8(png):
    """The pixels of an 8-bit RGB, non-interlaced PNG (what the daemon
    writes) as bytes [H, W, 3], and (W, H)."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos:pos + 4])
        kind, body = png[pos + 4:pos + 8], png[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if (depth, color, interlace) != (8, 2, 0):
                raise ValueError("expected 8-bit RGB without interlacing")
        elif kind == b"IDAT":
            idat += body
    raw, stride, bpp = zlib.decompress(idat), width * 3, 3
    out, prev = bytearray(), bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out += line
        prev = line
    return bytes(out), (width, height)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_family(daemon, folder, only_case, max_levels):
    with open(os.path.join(folder, "cases.json")) as f:
        spec = json.load(f)
    port, metrics = free_port(), free_port()
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([daemon, f"--models_dir={folder}", f"--listen=127.0.0.1:{port}",
                             f"--metrics_listen=127.0.0.1:{metrics}", "--fp8=off"], stdout=log, stderr=log)
    rows, worst = [], 0
    try:
        client = dc.Client(f"127.0.0.1:{port}")
        deadline = time.time() + 60
        while True:
            try:
                if client.health() == "SERVING":
                    break
            except dc.DiffusiondError:
                pass
            if time.time() > deadline or proc.poll() is not None:
                log.seek(0)
                raise RuntimeError("the daemon did not start:\n" + log.read().decode(errors="replace"))
            time.sleep(0.2)
        for case in spec["cases"]:
            if only_case and case["name"] != only_case:
                continue
            image = client.generate(spec["pipeline_folder"], case["prompt"], case["negative_prompt"] or None,
                                    width=case["width"], height=case["height"], steps=case["steps"],
                                    guidance_scale=case["daemon_guidance"], seed=case["seed"],
                                    true_cfg_scale=case.get("true_cfg_scale", 0.0))
            ours, size = decode_png_rgb8(image.png)
            ref, shape = read_safetensors_u8(os.path.join(folder, "ref.safetensors"), f"{case['name']}.image_u8")
            if [size[1], size[0], 3] != shape:
                raise RuntimeError(f"{case['name']}: the daemon gave {size[0]}x{size[1]}, upstream {shape}")
            diffs = [abs(a - b) for a, b in zip(ours, ref)]
            off = sum(1 for d in diffs if d)
            rows.append((case["name"], max(diffs), off, len(diffs)))
            worst = max(worst, max(diffs))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return rows, worst <= max_levels


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--daemon", required=True, help="the diffusiond binary")
    ap.add_argument("--refs", required=True, help="e2e_pipe_refgen.py's --out-root")
    ap.add_argument("--family", help="one family's folder only (zimage, flux, ...)")
    ap.add_argument("--case", help="one case only")
    ap.add_argument("--max_levels", type=int, default=1)
    args = ap.parse_args()
    ok = True
    print("| case | max level difference (8 bits) | values off |")
    print("|---|---|---|")
    for name in sorted(os.listdir(args.refs)):
        folder = os.path.join(args.refs, name)
        if not name.endswith("-pipe") or (args.family and name != f"{args.family}-pipe"):
            continue
        rows, fine = run_family(os.path.abspath(args.daemon), os.path.abspath(folder), args.case, args.max_levels)
        ok = ok and fine
        for case, worst, off, total in rows:
            print(f"| `{case}` | {worst} | {off} of {total:,} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
