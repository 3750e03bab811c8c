#!/usr/bin/env python3
"""Side-by-side CPU benchmark: the C++ Z-Image port against upstream diffusers, same weights and inputs.

  z_image_vs_upstream.py --port-bin PATH --diffusers DIFFUSERS_ROOT [--threads 1,2] [--rounds 3]
                         [--iters 1] [--latent 64] [--caption 128] [--workdir DIR] [--json OUT]

The port writes the mid-size random-weight model (`PORT_BIN write-model DIR`), z_image_upstream.py
writes the inputs, then for each thread count and round the two implementations run one after the
other, each in a fresh process (`... run MODEL_DIR INPUTS --threads N --iters K --out FILE`), in
alternating order so that neither always runs on a warmer machine. Each prints one JSON line with its
per-forward seconds and peak RSS. Prints a markdown table, plus the largest difference between the two
outputs as a check that both computed the same forward.

Run it with a Python that has torch (upstream runs under --python, default this interpreter); the
driver itself needs only the standard library. Thread counts are passed explicitly; the environment
(OMP_*, OPENBLAS_*) is handed to both sides unchanged.
"""

import argparse
import array
import json
import math
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile

UPSTREAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "z_image_upstream.py")


def read_f32(path, name):
    """One float32 tensor of a .safetensors file, as a flat array (both sides write `out` as F32)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        entry = json.loads(f.read(n))[name]
        if entry["dtype"] != "F32":
            raise SystemExit(f"{path}: {name} is {entry['dtype']}, expected F32")
        begin, end = entry["data_offsets"]
        f.seek(8 + n + begin)
        values = array.array("f")
        values.frombytes(f.read(end - begin))
    if sys.byteorder != "little":
        values.byteswap()
    return entry["shape"], values


def run_json(cmd):
    """Runs `cmd`, returns the last JSON line of its stdout (stderr passes through for progress)."""
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"exit {proc.returncode}: {' '.join(cmd)}\n{proc.stdout[-2000:]}")
    for line in reversed(proc.stdout.splitlines()):
        if line.strip().startswith("{"):
            return json.loads(line)
    raise SystemExit(f"no JSON line in the output of: {' '.join(cmd)}\n{proc.stdout[-2000:]}")


def compare(port_path, upstream_path):
    """(max |port - upstream|, max |upstream|) over the `out` tensors."""
    ps, p = read_f32(port_path, "out")
    us, u = read_f32(upstream_path, "out")
    if ps != us:
        raise SystemExit(f"output shapes differ: port {ps}, upstream {us}")
    if any(math.isnan(x) for x in p) or any(math.isnan(x) for x in u):
        return math.nan, math.nan  # max() would silently skip NaNs
    return max(abs(a - b) for a, b in zip(p, u)), max(abs(b) for b in u)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port-bin", required=True, help="the C++ port's benchmark binary")
    p.add_argument("--diffusers", required=True, help="diffusers checkout root (holds src/diffusers)")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iters", type=int, default=1, help="timed forwards per process (after one warm-up)")
    p.add_argument("--latent", type=int, default=64, help="latent height = width")
    p.add_argument("--caption", type=int, default=128, help="caption tokens")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--workdir", help="keep the model, inputs and outputs here (default: a temp dir, removed)")
    p.add_argument("--json", help="also write all measurements here")
    p.add_argument("--python", default=sys.executable, help="Python with torch for the upstream side")
    args = p.parse_args()
    threads = [int(n) for n in args.threads.split(",") if n]

    workdir = args.workdir or tempfile.mkdtemp(prefix="z_image_vs_upstream_")
    os.makedirs(workdir, exist_ok=True)
    try:
        model_dir = os.path.join(workdir, "model")
        inputs = os.path.join(workdir, "inputs.safetensors")
        subprocess.run([args.port_bin, "write-model", model_dir], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(model_dir, "config.json")) as f:
            config = json.load(f)
        subprocess.run([args.python, UPSTREAM, "write-inputs", inputs, "--latent", str(args.latent), str(args.latent),
                        "--caption", str(args.caption), "--cap-dim", str(config["cap_feat_dim"]),
                        "--channels", str(config["in_channels"]), "--seed", str(args.seed)], check=True)

        outs = {impl: os.path.join(workdir, f"{impl}.safetensors") for impl in ("port", "upstream")}
        commands = {
            "port": lambda n: [args.port_bin, "run", model_dir, inputs, "--threads", str(n),
                               "--iters", str(args.iters), "--out", outs["port"]],
            "upstream": lambda n: [args.python, UPSTREAM, "run", model_dir, inputs, "--threads", str(n),
                                   "--iters", str(args.iters), "--out", outs["upstream"],
                                   "--diffusers", args.diffusers],
        }
        runs, rows, checks = [], [], {}
        for n in threads:
            for r in range(args.rounds):
                for impl in ("port", "upstream") if r % 2 == 0 else ("upstream", "port"):
                    if os.path.exists(outs[impl]):
                        os.remove(outs[impl])  # so that a run which writes nothing cannot pass on a stale file
                    res = run_json(commands[impl](n))
                    if res.get("impl") != impl or res.get("threads") != n:
                        raise SystemExit(f"{impl} answered {res} for threads {n}")
                    res["round"] = r
                    runs.append(res)
                    print(f"threads {n} round {r} {impl}: {statistics.median(res['seconds']):.3f} s/forward, "
                          f"peak RSS {res['peak_rss_bytes'] / 2**20:.0f} MiB", file=sys.stderr, flush=True)
                # Same weights, same inputs: the outputs must agree to float32 rounding in every round.
                diff, ref = compare(outs["port"], outs["upstream"])
                checks.setdefault(n, []).append(diff)
            mine = {impl: [x for x in runs if x["impl"] == impl and x["threads"] == n] for impl in commands}
            # Median over every timed forward of every round; peak RSS is the largest of the rounds.
            sec = {impl: statistics.median([s for x in mine[impl] for s in x["seconds"]]) for impl in commands}
            rss = {impl: max(x["peak_rss_bytes"] for x in mine[impl]) for impl in commands}
            rows.append({"threads": n, "seconds": sec, "peak_rss_bytes": rss, "max_abs_diff": max(checks[n]),
                         "max_abs_ref": ref})

        print("| threads | upstream median s/forward | port median s/forward | port/upstream "
              "| upstream peak RSS MiB | port peak RSS MiB | RSS port/upstream |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for row in rows:
            s, m = row["seconds"], row["peak_rss_bytes"]
            print(f"| {row['threads']} | {s['upstream']:.3f} | {s['port']:.3f} | {s['port'] / s['upstream']:.2f} "
                  f"| {m['upstream'] / 2**20:.0f} | {m['port'] / 2**20:.0f} | {m['port'] / m['upstream']:.2f} |")
        print()
        for row in rows:
            print(f"threads {row['threads']}: max |port - upstream| = {row['max_abs_diff']:.3g} "
                  f"(max |upstream| = {row['max_abs_ref']:.3g})")
        torch_versions = sorted({x.get("torch", "?") for x in runs if x["impl"] == "upstream"})
        print(f"\n{args.rounds} rounds x {args.iters} timed forwards per process; latent {args.latent}x{args.latent}, "
              f"{args.caption} caption tokens; dim {config['dim']}, "
              f"{config['n_layers']} + {config['n_refiner_layers']} "
              f"layers; upstream torch {', '.join(torch_versions)}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"config": config, "latent": args.latent, "caption": args.caption, "rounds": args.rounds,
                           "iters": args.iters, "runs": runs, "summary": rows}, f, indent=1)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
