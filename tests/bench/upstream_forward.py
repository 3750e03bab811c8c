#!/usr/bin/env python3
"""Upstream half of the side-by-side benchmarks: diffusers' own transformers, timed as the port is.

Runs ZImageTransformer2DModel or FluxTransformer2DModel from a diffusers source tree
(``--diffusers SRC``, the folder holding ``diffusers/``, i.e. a checkout's ``src/``) on whatever torch
this Python has: Debian 12's CPU torch 1.13, or a GPU machine's CUDA wheel. The real package is
imported through tools/refgen/upstream_env.py, which stubs only the packages this Python lacks
(hub downloads, images, accelerate; numpy where the wheel came without it) and, on torch < 2,
supplies SDPA and nn.RMSNorm by their definitions. None of it touches the arithmetic; the JSON line
lists every shim. Nothing of diffusers is copied into this project.

  upstream_forward.py write-inputs MODEL_DIR OUT --arch A --latent H W --text L --batch B [--seed S]
  upstream_forward.py run MODEL_DIR INPUTS... --arch A --diffusers SRC [--device D] [--dtype T]
                          [--threads N] [--iters K] [--out-dir DIR] [--count-flops]

The inputs file holds the port's Step inputs, by the same names (docs/api.md): Z-Image `x`
[B, C, 1, H, W], `t` [B], `cap_feats` [B, L, D]; FLUX the keyword arguments of upstream's forward
(`hidden_states`, `encoder_hidden_states`, `pooled_projections`, `timestep`, `img_ids`, `txt_ids`,
and `guidance` when the model embeds it). `run` loads the model once, then for each inputs file runs
one untimed forward and K timed ones, and prints one JSON line:
{"impl": "upstream", "arch", "device", "dtype", "torch", "threads", "load_seconds", "shims",
 "peak_rss_bytes", "device_baseline_used_bytes", "runs": [{"inputs", "batch", "seconds",
 "peak_vram_reserved_bytes", "peak_vram_allocated_bytes", "device_used_bytes", "flop"}]}.
The VRAM figures are the caching allocator's peaks over the timed forwards (nothing is given back
between them) and cudaMemGetInfo's used bytes after them; null on the CPU. `--count-flops` counts
the warm-up forward's work: every nn.Linear call as 2·M·K·N, every attention as 4·B·H·Sq·Sk·D
(QKᵀ and PV), from the shapes they are called with. `--out-dir` writes each run's output as
upstream.<i>.safetensors (`out`, float32).
"""

import argparse
import contextlib
import inspect
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "refgen"))
import upstream_env  # noqa: E402
from safetensors_io import read_safetensors, st_header, write_safetensors  # noqa: E402

ARCHES = {"z-image": "ZImageTransformer2DModel", "flux": "FluxTransformer2DModel"}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def model_weight_files(model_dir):
    """name -> file for a diffusers model folder: one safetensors file, or shards with an index."""
    single = os.path.join(model_dir, "diffusion_pytorch_model.safetensors")
    if os.path.exists(single):
        return {name: single for name in st_header(single)[0]}
    with open(single + ".index.json") as f:
        return {name: os.path.join(model_dir, shard) for name, shard in json.load(f)["weight_map"].items()}


def read_config(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        return json.load(f)


def upstream_class(arch, diffusers_src):
    upstream_env.import_diffusers(diffusers_src, only_missing=True)  # puts `diffusers` on sys.path, shimmed
    if arch == "z-image":
        from diffusers.models.transformers import transformer_z_image as zi
        upstream_env.fix_z_image_for_torch1(zi)
        return zi.ZImageTransformer2DModel
    from diffusers.models.transformers import transformer_flux
    return transformer_flux.FluxTransformer2DModel


@contextlib.contextmanager
def no_init():
    """Skips nn.Linear's random init while constructing: every parameter is overwritten from the file
    right after, and initialising billions of values would only slow each run's start."""
    reset = nn.Linear.reset_parameters
    nn.Linear.reset_parameters = lambda self: None
    try:
        yield
    finally:
        nn.Linear.reset_parameters = reset


def build_model(cls, model_dir, device, dtype):
    """Upstream's model from config.json (only the keys its constructor takes), every parameter
    overwritten from the weights (strict: a missing or unexpected key is an error), at `dtype` on
    `device`: built there directly where torch can (>= 2), so a 12 GB model never exists at float32."""
    config = read_config(model_dir)
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self"}
    place = device if hasattr(torch.device, "__enter__") else contextlib.nullcontext()
    with no_init(), place:
        model = cls(**{k: v for k, v in config.items() if k in accepted})
    model = model.to(device=device, dtype=dtype).eval()

    files = model_weight_files(model_dir)
    params = model.state_dict()  # shares storage with the parameters
    missing, unexpected = sorted(set(params) - set(files)), sorted(set(files) - set(params))
    if missing or unexpected:
        raise SystemExit(f"{model_dir}: weights do not match the model: missing {missing}, unexpected {unexpected}")
    with torch.no_grad():
        for path in sorted(set(files.values())):
            for name, value in read_safetensors(path, names={n for n, p in files.items() if p == path},
                                                keep_dtype=True):
                if params[name].shape != value.shape:
                    raise SystemExit(f"{name}: shape {list(value.shape)} in the file, "
                                     f"{list(params[name].shape)} in the model")
                params[name].copy_(value)
    return model


def forward_fn(arch, model, inputs, device, dtype):
    """The forward as the pipelines call it, on inputs moved to the device at the compute dtype
    (ids stay float32, as upstream's pipelines make them)."""
    def on(name, keep=False):
        value = inputs[name].to(device)
        return value if keep else value.to(dtype)

    if arch == "z-image":
        x, t, cap = on("x"), on("t"), on("cap_feats")
        xs, caps = list(x.unbind(0)), list(cap.unbind(0))
        return lambda: torch.stack(model(xs, t, caps, return_dict=False)[0])
    kwargs = {name: on(name) for name in ("hidden_states", "encoder_hidden_states", "pooled_projections", "timestep")}
    kwargs.update(img_ids=on("img_ids", keep=True), txt_ids=on("txt_ids", keep=True))
    kwargs["guidance"] = on("guidance") if "guidance" in inputs else None
    return lambda: model(**kwargs, return_dict=False)[0]


class FlopCounter:
    """Counts the work of the forwards run inside it: nn.Linear calls (2·M·K·N) and attention through
    F.scaled_dot_product_attention (4·B·H·Sq·Sk·D), which diffusers' native backend calls by name."""

    def __init__(self, model):
        self.model, self.gemm, self.attention = model, 0, 0

    def __enter__(self):
        def on_linear(module, args, _out):
            self.gemm += 2 * args[0].numel() * module.out_features

        self.hooks = [m.register_forward_hook(on_linear) for m in self.model.modules() if isinstance(m, nn.Linear)]
        self.sdpa = F.scaled_dot_product_attention

        def counting_sdpa(query, key, value, *args, **kwargs):
            batch_heads = query.numel() // (query.shape[-2] * query.shape[-1])
            self.attention += 4 * batch_heads * query.shape[-2] * key.shape[-2] * query.shape[-1]
            return self.sdpa(query, key, value, *args, **kwargs)

        F.scaled_dot_product_attention = counting_sdpa
        return self

    def __exit__(self, *exc):
        for h in self.hooks:
            h.remove()
        F.scaled_dot_product_attention = self.sdpa
        return False


def peak_rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return None


def device_used_bytes(device):
    if device.type != "cuda":
        return None
    free, total = torch.cuda.mem_get_info(device)
    return total - free


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def cmd_run(args):
    device, dtype = torch.device(args.device), DTYPES[args.dtype]
    torch.set_num_threads(args.threads)
    upstream_env.limit_openblas_threads(args.threads)
    if device.type == "cuda":
        torch.cuda.init()
        torch.empty(1, device=device)  # the context, before the baseline
    baseline = device_used_bytes(device)
    start = time.perf_counter()
    model = build_model(upstream_class(args.arch, args.diffusers), args.model_dir, device, dtype)
    sync(device)
    report = {"impl": "upstream", "arch": args.arch, "device": str(device), "dtype": args.dtype,
              "torch": torch.__version__, "threads": args.threads, "load_seconds": time.perf_counter() - start,
              "device_baseline_used_bytes": baseline, "runs": []}
    if device.type == "cpu":
        report.update(upstream_env.cpu_kernels(dtype))
    if device.type == "cuda":
        # What building at float32 and casting left cached is not the forward's: give it back, so that
        # the peaks below are the forwards' own.
        torch.cuda.empty_cache()
        report["device_name"] = torch.cuda.get_device_name(device)
    for i, path in enumerate(args.inputs):
        inputs = dict(read_safetensors(path))
        forward = forward_fn(args.arch, model, inputs, device, dtype)
        run = {"inputs": path, "batch": int(next(iter(inputs.values())).shape[0]), "seconds": [], "flop": None}
        with torch.no_grad():
            if args.count_flops:
                with FlopCounter(model) as counter:
                    forward()
                run["flop"] = {"gemm": counter.gemm, "attention": counter.attention}
            else:
                forward()  # warm-up, untimed
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            for _ in range(args.iters):
                sync(device)
                begin = time.perf_counter()
                out = forward().float().cpu()  # the port's step hands its output to the host too
                sync(device)
                run["seconds"].append(time.perf_counter() - begin)
        if device.type == "cuda":
            run["peak_vram_reserved_bytes"] = torch.cuda.max_memory_reserved(device)
            run["peak_vram_allocated_bytes"] = torch.cuda.max_memory_allocated(device)
            run["device_used_bytes"] = device_used_bytes(device)
        if args.out_dir:
            os.makedirs(args.out_dir, exist_ok=True)
            write_safetensors(os.path.join(args.out_dir, f"upstream.{i}.safetensors"), {"out": out})
        report["runs"].append(run)
    report["peak_rss_bytes"] = peak_rss_bytes()
    report["shims"] = upstream_env.SHIMS
    print(json.dumps(report), flush=True)


def flux_image_ids(h, w):
    """FluxPipeline._prepare_latent_image_ids for a packed (h/2)×(w/2) latent: (0, row, column)."""
    rows = torch.arange(h // 2, dtype=torch.float32)[:, None].expand(h // 2, w // 2)
    cols = torch.arange(w // 2, dtype=torch.float32)[None, :].expand(h // 2, w // 2)
    return torch.stack([torch.zeros_like(rows), rows, cols], dim=-1).reshape(-1, 3)


def cmd_write_inputs(args):
    """Random inputs of the model's shapes: a 16-channel latent of H×W (1024² is 128×128), L text
    tokens, batch B (2 for classifier-free guidance), at t = 0.5."""
    config = read_config(args.model_dir)
    g = torch.Generator().manual_seed(args.seed)
    h, w, b, n = args.latent[0], args.latent[1], args.batch, args.text
    t = torch.full([b], 0.5)
    if args.arch == "z-image":
        tensors = {"x": torch.randn(b, config["in_channels"], 1, h, w, generator=g), "t": t,
                   "cap_feats": torch.randn(b, n, config["cap_feat_dim"], generator=g)}
    else:
        if h % 2 or w % 2:
            raise SystemExit("FLUX packs 2×2 latent patches: --latent must be even")
        tensors = {"hidden_states": torch.randn(b, (h // 2) * (w // 2), config["in_channels"], generator=g),
                   "encoder_hidden_states": torch.randn(b, n, config["joint_attention_dim"], generator=g),
                   "pooled_projections": torch.randn(b, config["pooled_projection_dim"], generator=g),
                   "timestep": t, "img_ids": flux_image_ids(h, w), "txt_ids": torch.zeros(n, 3)}
        if config.get("guidance_embeds"):
            tensors["guidance"] = torch.full([b], 3.5)
    write_safetensors(args.out, tensors)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="time upstream forwards on a diffusers model folder")
    r.add_argument("model_dir")
    r.add_argument("inputs", nargs="+")
    r.add_argument("--arch", choices=sorted(ARCHES), required=True)
    r.add_argument("--diffusers", required=True, help="the folder holding diffusers/ (a checkout's src/)")
    r.add_argument("--device", default="cpu")
    r.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--iters", type=int, default=1)
    r.add_argument("--out-dir")
    r.add_argument("--count-flops", action="store_true")
    r.set_defaults(fn=cmd_run)
    w = sub.add_parser("write-inputs", help="write random inputs for a model folder")
    w.add_argument("model_dir")
    w.add_argument("out")
    w.add_argument("--arch", choices=sorted(ARCHES), required=True)
    w.add_argument("--latent", type=int, nargs=2, metavar=("H", "W"), required=True)
    w.add_argument("--text", type=int, required=True, help="text tokens")
    w.add_argument("--batch", type=int, default=1)
    w.add_argument("--seed", type=int, default=0)
    w.set_defaults(fn=cmd_write_inputs)
    args = p.parse_args(argv)
    args.fn(args)


if __name__ == "__main__":
    main()
