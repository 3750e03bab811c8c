#!/usr/bin/env python3
"""Side by side: the port against upstream diffusers and transformers, same weights, same inputs, same device.

  vs_upstream.py --port-bin PATH [--diffusers SRC] [--transformers SRC] [--device cpu|cuda:0]
                 [--size demo|mid|real] [--models z-image,flux] [--dtypes bfloat16] [--threads 1]
                 [--batches 1,2] [--variants fp8,half] [--rounds 1] [--iters 3] [--profile z-image]
                 [--json OUT] [--workdir DIR]

Models: the denoisers z-image, flux and cosmos (Anima's DiT); the text towers qwen25vl (Qwen-Image's
Qwen2.5-VL) and qwen3vl (Krea 2's Qwen3-VL), from transformers (--transformers); qwenimage-vae, the
Qwen-Image VAE's decode. Sizes (SIZES, REAL_CONFIGS): demo, the demo models; mid, the benchmarks'
mid-size ones (write_mid_size_model, write_mid_size_component: the denoisers over a 64×64 latent, the
towers at their released widths with a few layers over 256 tokens, the VAE at its real config decoding
a 128×128 latent, 1024²); real, the configs in docs/configs (FLUX with --flux-blocks blocks).

For each model the port writes a folder of random bf16 weights (`PORT_BIN write-model`; on a GPU the
values are drawn there) and upstream_forward.py writes the inputs, one file per batch size (2 is
classifier-free guidance, or two prompts). Then, for each dtype and thread count and round, the two sides run one
after the other, each in a fresh process that loads the model once and runs every batch (one
untimed forward, then --iters timed ones), in alternating order so that neither always runs on a
warmer machine:
- upstream: diffusers' own transformer (upstream_forward.py, on this --python's torch), its default
  attention backend;
- the port: the same folder through the engine, as the daemon runs it (`PORT_BIN run`): on a GPU
  placed in the VRAM tier, on the CPU (the dry run) placed on the simulated device with --port-device
  sim, so that the dry run goes through the same placement path.
The port's variants run in every round, right after the port: `fp8` (e4m3fn storage, the scaled FP8
matmul where the device has it) and, with a device, `half` (a VRAM budget of --resident-fraction of the
placement plus the activations, so that about half the blocks stream; the tiny demo models need more
than half, since their weights outside the blocks and two streaming slots already take most of it).

Reported per model, dtype, threads and batch: seconds per step (median over every timed forward of
every round), their ratio, peak memory (on a GPU the caching allocator's peak reserved bytes on both
sides, on the CPU the process's peak RSS), the port's model FLOP utilisation, the variants' times
against the port's, the largest output differences, and the VRAM check below; on the CPU, the BLAS
kernels and oneDNN kernels each side ran (openblas_get_corename; the ISA and matmul kernel oneDNN's
verbose mode names). Both sides run the OpenBLAS kernels the port chooses (OPENBLAS_CORETYPE, unless
it is set already), and sides that ran different ones fail the comparison. The FLOP of a step are
counted in upstream's warm-up forward from the shapes each op is called with: every nn.Linear as
2·M·K·N, every attention as 4·B·H·Sq·Sk·D (QKᵀ and PV); MFU = FLOP / port seconds / the device's dense
bf16 peak (--peak-tflops, default 989.4 for an H100 or H200 SXM, else none).

With --profile MODELS, the port and its fp8 variant each run one more batch-1 step of those models
under libtorch's profiler (port_forward_cli --profile), after every model's timed rounds, and so does
fp8fast (fp8 with cuBLAS's fast accumulation, --fp8_fast_accum); the table is followed by each one's
ops by self time (profile_summary.py) and its output's difference from the port's. On a GPU these runs set
CUDA_LAUNCH_BLOCKING=1, so that each op's time is its kernels' (plus a launch's overhead) rather than
the time to enqueue them; their step times are not the figures of record.

The VRAM check (a GPU or the simulated device): what the device really held during the port's calls
(the lowest free memory sampled every millisecond, against the free memory before the first call)
must stay within the VRAM budget + --vram-overhead-mib (what the books do not see: cuBLAS
workspaces, the allocator's rounding). A failed check, outputs that disagree beyond the dtype's
tolerance, or a side that fails, makes the exit status 1 (the table is printed first).
"""

import argparse
import functools
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
UPSTREAM = os.path.join(HERE, "upstream_forward.py")
sys.path.insert(0, os.path.join(ROOT, "tools", "refgen"))

CONFIGS = os.path.join(ROOT, "docs", "configs")
# Real configs: Z-Image-Turbo's transformer; FLUX.1-dev at its real width with --flux-blocks blocks;
# Anima's transformer; Qwen-Image's text encoder (Qwen2.5-VL-7B) and VAE; Krea 2's (Qwen3-VL-4B).
REAL_CONFIGS = {"z-image": os.path.join(CONFIGS, "z-image-turbo", "transformer", "config.json"),
                "flux": os.path.join(CONFIGS, "flux1-dev-transformer.json"),
                "cosmos": os.path.join(CONFIGS, "anima-transformer.json"),
                "qwen25vl": os.path.join(CONFIGS, "qwen-image-text-encoder.json"),
                "qwen3vl": os.path.join(CONFIGS, "krea2-text-encoder.json"),
                "qwenimage-vae": os.path.join(CONFIGS, "qwen-image-vae.json")}
# The port's architecture for each model name (port_forward_cli write-model --arch).
PORT_ARCH = {"z-image": "z-image", "flux": "flux", "cosmos": "cosmos", "qwen25vl": "qwen2.5-vl",
             "qwen3vl": "qwen3-vl", "qwenimage-vae": "autoencoder-kl-qwen-image"}
TOWERS = ("qwen25vl", "qwen3vl")  # run from transformers; the rest from diffusers
# Latent side and text tokens per size and model: 1024² (a 128×128 latent) at the real size, and for
# the VAE at every size but demo; FLUX pads T5 to 512, Anima's conditioner gives 512 rows; a tower
# encodes a prompt in its chat template. A model without a latent or a text has no entry.
SIZES = {"demo": {"latent": {"z-image": 16, "flux": 16, "cosmos": 16, "qwenimage-vae": 16},
                  "text": {"z-image": 16, "flux": 16, "cosmos": 16, "qwen25vl": 16, "qwen3vl": 16}},
         "mid": {"latent": {"z-image": 64, "flux": 64, "cosmos": 64, "qwenimage-vae": 128},
                 "text": {"z-image": 128, "flux": 512, "cosmos": 512, "qwen25vl": 256, "qwen3vl": 256}},
         "real": {"latent": {"z-image": 128, "flux": 128, "cosmos": 128, "qwenimage-vae": 128},
                  "text": {"z-image": 128, "flux": 512, "cosmos": 512, "qwen25vl": 256, "qwen3vl": 256}}}
# Largest |port − upstream| / max |upstream| that still says "the same forward".
TOLERANCE = {"float32": 1e-4, "bfloat16": 0.1}
# Models whose upstream bf16 output is itself further than that from its float32 one: the random-weight
# Qwen-Image VAE drives most of its clamped output to ±1 through 30-odd bf16 convolutions, and upstream's
# own bf16 decode of a 32×32 latent is 0.17 of max |out| from its float32 decode (the port's 0.20), while
# the two float32 decodes agree to 1.2e-5.
MODEL_TOLERANCE = {("qwenimage-vae", "bfloat16"): 0.25}
DENSE_BF16_TFLOPS = {"H100": 989.4, "H200": 989.4}
# Ops per profile kept in the table and the JSON (the rest are in the trace).
PROFILE_TOP = 15


CHILD = None  # the side running now, ended with this driver (a deadline's SIGTERM)


class Deadline(Exception):
    """A SIGTERM: the measurements so far are reported, the rest is not run."""


def on_term(signum, _frame):
    if CHILD is not None and CHILD.poll() is None:
        CHILD.kill()
    raise Deadline(f"signal {signum}")


def run(cmd, stdout=None, env=None):
    """Runs `cmd` as the current child (with `env` added to the environment); returns (exit status, its
    stdout when captured)."""
    global CHILD
    print("$ " + " ".join([f"{k}={v}" for k, v in (env or {}).items()] + list(cmd)), file=sys.stderr, flush=True)
    CHILD = subprocess.Popen(cmd, stdout=stdout, text=True, env=dict(os.environ, **env) if env else None)
    out, _ = CHILD.communicate()
    CHILD, status = None, CHILD.returncode
    return status, out


def run_json(cmd, what, env=None):
    """Runs `cmd`; returns the last JSON line of its stdout, or None (with the reason on stderr)."""
    status, out = run(cmd, subprocess.PIPE, env)
    if status != 0:
        print(f"{what}: exit {status}\n{out[-2000:]}", file=sys.stderr, flush=True)
        return None
    for line in reversed(out.splitlines()):
        if line.strip().startswith("{"):
            return json.loads(line)
    print(f"{what}: no JSON line in its output\n{out[-2000:]}", file=sys.stderr, flush=True)
    return None


def openblas_core(summary):
    """The kernel set named in a BLAS summary ("OpenBLAS 0.3.21, Cooperlake kernels (...)"), or None."""
    match = re.search(r"OpenBLAS [^,]*, (\w+) kernels", summary or "")
    return match.group(1) if match else None


def port_openblas_core(port_bin):
    """The OpenBLAS kernels the port runs on: port_forward_cli chooses them as it starts (correcting a
    generic fallback) and says so on stderr."""
    proc = subprocess.run([port_bin, "--help"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    line = next((l for l in proc.stderr.splitlines() if l.startswith("blas: ")), "")
    return openblas_core(line)


def read_out(path):
    from safetensors_io import read_safetensors  # needs torch: the --python that runs upstream has it
    return dict(read_safetensors(path))["out"]


def compare(a_path, b_path):
    """max |a − b| / max |b| over the two `out` tensors (inf for a shape mismatch, nan for NaNs)."""
    a, b = read_out(a_path), read_out(b_path)
    if a.shape != b.shape:
        return math.inf
    ref = float(b.abs().max())
    diff = float((a - b).abs().max())
    return diff / ref if ref > 0 else diff


def median_seconds(results, batch_index):
    return statistics.median(s for r in results for s in r["runs"][batch_index]["seconds"])


def mib(n):
    return f"{n / 2**20:.0f} MiB" if n is not None else "n/a"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port-bin", required=True, help="the port's port_forward_cli")
    p.add_argument("--diffusers", help="the folder holding diffusers/ (a checkout's src/); without it only the "
                                       "port runs, but for the towers")
    p.add_argument("--transformers", help="the folder holding transformers/ (a checkout's src/), for the towers "
                                          "(qwen25vl, qwen3vl); without it only the port runs them")
    p.add_argument("--python", default=sys.executable, help="a Python with torch, for the upstream side")
    p.add_argument("--device", default="cpu", help="cpu or cuda:N: where both sides run")
    p.add_argument("--port-device", help="the port's device: default --device, except sim for a cpu run "
                                         "with variants")
    p.add_argument("--size", choices=sorted(SIZES), default="demo")
    p.add_argument("--models", default="z-image,flux")
    p.add_argument("--dtypes", default="bfloat16")
    p.add_argument("--threads", default="1", help="CPU threads per side, comma-separated")
    p.add_argument("--batches", default="1,2")
    p.add_argument("--variants", default="fp8,half", help="the port's variants, run in every round after the port")
    p.add_argument("--resident-fraction", type=float, default=0.5,
                   help="`half`'s VRAM budget: this share of the full placement, plus the activations")
    p.add_argument("--flux-blocks", default="2,4", help="double,single blocks of the real-width FLUX")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--iters", type=int, default=3, help="timed forwards per process, after one warm-up")
    p.add_argument("--profile", default="",
                   help="models (comma-separated) whose port and fp8 variant run one more, profiled, batch-1 "
                        "step after the rounds")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--peak-tflops", type=float, help="the device's dense bf16 peak (default: by device name)")
    p.add_argument("--vram-overhead-mib", type=int, default=1024)
    p.add_argument("--workdir", help="keep models, inputs and outputs here (default: a temp folder, removed)")
    p.add_argument("--json", help="also write every measurement here")
    p.add_argument("--markdown", help="also write the table here")
    args = p.parse_args()
    signal.signal(signal.SIGTERM, on_term)
    models = [m for m in args.models.split(",") if m]
    dtypes = [d for d in args.dtypes.split(",") if d]
    threads = [int(n) for n in args.threads.split(",") if n]
    batches = [int(n) for n in args.batches.split(",") if n]
    variants = [v for v in args.variants.split(",") if v]
    on_gpu = args.device.startswith("cuda")
    port_device = args.port_device or (args.device if on_gpu or not variants else "sim")
    size = SIZES[args.size]
    for m in models:
        if m not in REAL_CONFIGS:
            raise SystemExit(f"--models: unknown model {m} ({', '.join(REAL_CONFIGS)})")
    for d in dtypes:
        if d not in TOLERANCE:
            raise SystemExit(f"--dtypes: unknown dtype {d} (float32, bfloat16)")

    if not on_gpu and "OPENBLAS_CORETYPE" not in os.environ:
        # Upstream's torch would take whatever OpenBLAS detects, a generic fallback on a CPU newer than
        # the library: give it the kernels the port chose, so that the two sides' matmuls compare.
        core = port_openblas_core(args.port_bin)
        if core:
            os.environ["OPENBLAS_CORETYPE"] = core
            print(f"OPENBLAS_CORETYPE={core} for both sides, the kernels the port chose", file=sys.stderr)

    workdir = args.workdir or tempfile.mkdtemp(prefix="vs_upstream_")
    os.makedirs(workdir, exist_ok=True)
    failures, rows, runs, profiles = [], [], [], []
    try:
        measure(args, models, dtypes, threads, batches, variants, on_gpu, port_device, size, workdir, failures, rows,
                runs, profiles)
    except Deadline as stop:
        failures.append(f"stopped by {stop}: what follows is what ran before")
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    report(args, on_gpu, rows, runs, profiles, failures)


def measure(args, models, dtypes, threads, batches, variants, on_gpu, port_device, size, workdir, failures, rows,
            runs, profiles):
    """Runs both sides for every model, dtype and thread count; appends to rows, runs and failures."""
    for v in variants:
        if v not in ("fp8", "half"):
            failures.append(f"--variants: unknown variant {v}")
    variants = [v for v in variants if v in ("fp8", "half")]
    # Profiles run after every model's figures, so that a deadline reached while profiling costs no
    # figure of record.
    profile_jobs = []
    for mi, model in enumerate(models):
        model_dir = os.path.join(workdir, model)
        write = [args.port_bin, "write-model", model_dir, "--arch", PORT_ARCH[model], "--seed", str(args.seed)]
        if args.size == "real":
            config = os.path.join(workdir, f"{model}.config.json")
            with open(REAL_CONFIGS[model]) as f:
                c = json.load(f)
            if model == "flux":
                c["num_layers"], c["num_single_layers"] = (int(n) for n in args.flux_blocks.split(","))
            with open(config, "w") as f:
                json.dump(c, f, indent=1)
            write += ["--config", config] + (["--device", args.device] if on_gpu and model != "cosmos" else [])
        else:
            write += ["--size", args.size]
        if run(write)[0] != 0:
            failures.append(f"{model}: write-model failed")
            continue
        inputs = []
        for b in batches:
            path = os.path.join(workdir, f"{model}.b{b}.safetensors")
            side = str(size["latent"].get(model, ""))
            shape = ["--latent", side, side] if side else []
            shape += ["--text", str(size["text"][model])] if model in size["text"] else []
            status, _ = run([args.python, UPSTREAM, "write-inputs", model_dir, path, "--arch", model] + shape +
                            ["--batch", str(b), "--seed", str(args.seed)])
            if status != 0:
                raise SystemExit(f"{model}: writing the inputs failed")
            inputs.append(path)

        for dtype in dtypes:
            for n in threads:
                outs = {impl: os.path.join(workdir, f"out.{model}.{dtype}.{n}.{impl}") for impl in
                        ["upstream", "port"] + variants}

                def port_cmd(out_dir, extra=()):
                    return ([args.port_bin, "run", model_dir] + inputs +
                            ["--device", port_device, "--dtype", dtype, "--threads", str(n), "--iters",
                             str(args.iters), "--out_dir", out_dir] + list(extra))

                sides = {"port": lambda: port_cmd(outs["port"])}
                source = (["--transformers", args.transformers] if model in TOWERS and args.transformers else
                          ["--diffusers", args.diffusers] if model not in TOWERS and args.diffusers else None)
                if source:
                    sides["upstream"] = lambda: ([args.python, UPSTREAM, "run", model_dir] + inputs +
                                                 ["--arch", model] + source + ["--device", args.device, "--dtype",
                                                  dtype, "--threads", str(n), "--iters", str(args.iters),
                                                  "--out-dir", outs["upstream"], "--count-flops"])

                def variant_cmd(v, base):
                    """The port's command for variant v, or None where it does not apply."""
                    if v == "fp8":
                        return port_cmd(outs[v], ["--fp8"])
                    if v == "half" and port_device != "cpu" and base is not None:
                        run0 = base["runs"][-1]
                        placement = run0.get("placement_bytes", 0)
                        activations = max(run0.get("vram_books_high_water_bytes", 0) - placement, 0)
                        return port_cmd(outs[v], ["--vram_budget",
                                                  str(int(placement * args.resident_fraction) + activations)])
                    return None

                # Every variant runs in every round, alternated with both sides, so that a
                # variant's ratio is no more exposed to the machine's drift than the port's.
                results = {impl: [] for impl in list(sides) + variants}
                for r in range(args.rounds):
                    # Upstream and the port swap places each round; the variants follow the port
                    # so that `half` sizes its budget from this round's placement.
                    port_group = ["port"] + variants
                    order = (["upstream"] + port_group if (r + mi) % 2 == 0 else port_group + ["upstream"])
                    order = [impl for impl in order if impl in sides or impl in variants]
                    for impl in order:
                        if impl in sides:
                            cmd = sides[impl]()
                        else:
                            cmd = variant_cmd(impl, results["port"][-1] if results["port"] else None)
                            if cmd is None:
                                continue
                        shutil.rmtree(outs[impl], ignore_errors=True)  # no pass on a stale file
                        label = f"{model} {dtype} " + (impl if impl in sides else f"port {impl}")
                        res = run_json(cmd, label)
                        if res is None:
                            failures.append(f"{model} {dtype} threads {n}: {label.split(' ', 2)[2]} failed")
                            continue
                        res.update(model=model, round=r, variant=impl)
                        results[impl].append(res)
                        runs.append(res)
                extra_results = {v: rs for v, rs in ((v, results.pop(v)) for v in variants) if rs}
                if model in args.profile.split(","):
                    profile_jobs.append(functools.partial(
                        profile_port, args, model, dtype, n, model_dir, inputs[0], port_device, on_gpu,
                        "fp8" in variants, workdir, failures, profiles))

                for bi, b in enumerate(batches):
                    row = {"model": model, "dtype": dtype, "threads": n, "batch": b}
                    for impl, rs in results.items():
                        if rs:
                            row[f"{impl}_s"] = median_seconds(rs, bi)
                            key = "allocator_peak_reserved_bytes" if impl == "port" else "peak_vram_reserved_bytes"
                            row[f"{impl}_peak"] = (max(x["runs"][bi].get(key, 0) for x in rs) if on_gpu
                                                   else max(x["peak_rss_bytes"] for x in rs))
                    up = results.get("upstream") or []
                    if up and up[-1]["runs"][bi].get("flop"):
                        flop = up[-1]["runs"][bi]["flop"]
                        row["flop"] = flop["gemm"] + flop["attention"]
                        row["attention_flop"] = flop["attention"]
                        name = up[-1].get("device_name", "")
                        peak = args.peak_tflops or next((v for k, v in DENSE_BF16_TFLOPS.items() if k in name),
                                                        None)
                        if peak and on_gpu and "port_s" in row:
                            row["peak_tflops"] = peak
                            row["port_mfu"] = row["flop"] / row["port_s"] / (peak * 1e12)
                    port_file = os.path.join(outs["port"], f"port.{bi}.safetensors")
                    if "port_s" in row and "upstream_s" in row:
                        row["rel_diff"] = compare(port_file, os.path.join(outs["upstream"],
                                                                          f"upstream.{bi}.safetensors"))
                        tolerance = MODEL_TOLERANCE.get((model, dtype), TOLERANCE[dtype])
                        if not row["rel_diff"] <= tolerance:
                            failures.append(f"{model} {dtype} batch {b}: port and upstream differ by "
                                            f"{row['rel_diff']:.3g} of max |out| (tolerance {tolerance})")
                    for v, rs in extra_results.items():
                        row[f"{v}_s"] = median_seconds(rs, bi)
                        row[f"{v}_peak"] = (max(x["runs"][bi].get("allocator_peak_reserved_bytes", 0) for x in rs)
                                            if on_gpu else max(x["peak_rss_bytes"] for x in rs))
                        row[f"{v}_plan"] = rs[-1]["runs"][bi].get("vram_plan", "").split(" (")[0]
                        row[f"{v}_rel_diff"] = compare(os.path.join(outs[v], f"port.{bi}.safetensors"), port_file)
                    # The VRAM promise, in device memory: each port process at its fullest, its
                    # placement and warm-up included.
                    for res in results.get("port", []) + [x for rs in extra_results.values() for x in rs]:
                        used, budget = res.get("device_peak_used_bytes"), res["vram_budget_bytes"]
                        if used is None:
                            continue
                        over = used - budget
                        row["vram_worst_over_budget"] = max(row.get("vram_worst_over_budget", -math.inf), over)
                        if over > args.vram_overhead_mib * 2**20:
                            failures.append(f"{model} {dtype} batch {b} port {res['variant']}: the device held "
                                            f"{mib(used)} against a VRAM budget of {mib(budget)}")
                    rows.append(row)
    for job in profile_jobs:
        job()


def profile_port(args, model, dtype, n, model_dir, batch1_input, port_device, on_gpu, with_fp8, workdir, failures,
                 profiles):
    """One profiled batch-1 step of the port and, `with_fp8`, of fp8 and fp8fast (the same with cuBLAS's
    fast accumulation in the scaled FP8 matmuls, the figure that decides whether to turn it on: its time
    beside its output's difference from the port's), summarised into `profiles`."""
    from profile_summary import self_times
    flags = {"port": [], "fp8": ["--fp8"], "fp8fast": ["--fp8", "--fp8_fast_accum"]}
    port_out = None
    for impl in ["port", "fp8", "fp8fast"] if with_fp8 else ["port"]:
        trace = os.path.join(workdir, f"profile.{model}.{dtype}.{n}.{impl}.json")
        out_dir = os.path.join(workdir, f"profile.{model}.{dtype}.{n}.{impl}")
        shutil.rmtree(out_dir, ignore_errors=True)
        cmd = ([args.port_bin, "run", model_dir, batch1_input, "--device", port_device, "--dtype", dtype,
                "--threads", str(n), "--iters", "1", "--out_dir", out_dir, "--profile", trace] + flags[impl])
        label = f"{model} {dtype} profile of the " + ("port" if impl == "port" else f"port {impl}")
        res = run_json(cmd, label, {"CUDA_LAUNCH_BLOCKING": "1"} if on_gpu else None)
        if res is None or not os.path.exists(trace):
            failures.append(f"{label} failed")
            continue
        self_us, calls, total_us = self_times(trace)
        out = os.path.join(out_dir, "port.0.safetensors")
        if impl == "port":
            port_out = out
        profiles.append({"model": model, "dtype": dtype, "threads": n, "variant": impl, "trace": trace,
                         "launch_blocking": on_gpu, "total_ms": total_us / 1000,
                         "rel_diff_vs_port": compare(out, port_out) if impl != "port" and port_out else None,
                         "ops": [{"op": name, "calls": calls[name], "self_ms": us / 1000}
                                 for name, us in self_us.most_common(PROFILE_TOP)]})


def report(args, on_gpu, rows, runs, profiles, failures):
    """Prints the table (and writes it and the JSON where asked); exits 1 on any failure."""
    peak_label = "peak VRAM (allocator)" if on_gpu else "peak RSS"
    lines = [f"| model | dtype | threads | batch | upstream s/step | port s/step | port/upstream "
             f"| upstream {peak_label} | port {peak_label} | port MFU | max diff / max out "
             f"| FP8 s/step (×port, ×upstream, diff) | FP8 {peak_label} (×upstream) "
             f"| half resident s/step (×port) | device over budget |",
             "|" + "---|" * 15]
    for r in rows:
        def f(key, fmt="{:.4f}"):
            return fmt.format(r[key]) if key in r else "n/a"
        ratio = f"{r['port_s'] / r['upstream_s']:.2f}" if "port_s" in r and "upstream_s" in r else "n/a"
        fp8 = (f"{r['fp8_s']:.4f} (×{r['fp8_s'] / r['port_s']:.2f}, "
               f"{'×%.2f' % (r['fp8_s'] / r['upstream_s']) if 'upstream_s' in r else 'n/a'}, "
               f"{r['fp8_rel_diff']:.3g})" if "fp8_s" in r and "port_s" in r else "n/a")
        fp8_peak = (f"{mib(r['fp8_peak'])}" + (f" (×{r['fp8_peak'] / r['upstream_peak']:.2f})"
                                               if r.get("upstream_peak") else "") if "fp8_peak" in r else "n/a")
        half = (f"{r['half_s']:.4f} (×{r['half_s'] / r['port_s']:.2f}; {r['half_plan']})"
                if "half_s" in r and "port_s" in r else "n/a")
        over = mib(r["vram_worst_over_budget"]) if "vram_worst_over_budget" in r else "n/a"
        lines.append(f"| {r['model']} | {r['dtype']} | {r['threads']} | {r['batch']} | {f('upstream_s')} "
                     f"| {f('port_s')} | {ratio} | {mib(r.get('upstream_peak'))} | {mib(r.get('port_peak'))} "
                     f"| {f('port_mfu', '{:.1%}')} | {f('rel_diff', '{:.3g}')} | {fp8} | {fp8_peak} | {half} | {over} |")
    lines.append("")
    counted = set()
    for r in rows:
        if "flop" in r and (r["model"], r["batch"]) not in counted:
            counted.add((r["model"], r["batch"]))
            lines.append(f"{r['model']} batch {r['batch']}: {r['flop'] / 1e12:.3f} TFLOP per step "
                         f"({r['attention_flop'] / 1e12:.3f} of it attention)")
    # Which CPU kernels each side ran, so that no figure is taken on a fallback unnoticed.
    cpu_runs = [] if on_gpu else runs
    kernels = {}
    for run in cpu_runs:
        key = (run.get("variant", run.get("impl")), run.get("dtype"))
        kernels.setdefault(key, f"{run.get('blas') or 'BLAS n/a'}; {run.get('onednn') or 'oneDNN n/a'}")
    for (side, dtype), what in sorted(kernels.items()):
        lines.append(f"kernels, {side} {dtype}: {what}")
    cores = {openblas_core(run.get("blas")) for run in cpu_runs} - {None}
    if len(cores) > 1:
        failures.append(f"the sides ran different OpenBLAS kernels ({', '.join(sorted(cores))}): their "
                        f"float32 figures do not compare; set OPENBLAS_CORETYPE for both")
    for prof in profiles:
        lines.append("")
        diff = (f", output {prof['rel_diff_vs_port']:.3g} of max |out| from the port's"
                if prof.get("rel_diff_vs_port") is not None else "")
        lines.append(f"profile, {prof['model']} {prof['dtype']} batch 1, {prof['variant']}"
                     f"{' (CUDA_LAUNCH_BLOCKING=1)' if prof['launch_blocking'] else ''}: "
                     f"{prof['total_ms']:.2f} ms in top-level ops{diff}; by self time:")
        for op in prof["ops"]:
            lines.append(f"  {op['op']:40s} {op['calls']:6d} calls {op['self_ms']:10.2f} ms "
                         f"{100 * op['self_ms'] / max(prof['total_ms'], 1e-9):5.1f}%")
    print("\n".join(lines))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "rows": rows, "runs": runs, "profiles": profiles, "failures": failures}, f,
                      indent=1)
    for message in failures:
        print(f"FAIL: {message}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
