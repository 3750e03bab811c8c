#!/usr/bin/env python3
"""Upstream half of the side-by-side benchmarks: upstream's own models, timed as the port is.

Runs, by --arch, diffusers' ZImageTransformer2DModel (z-image), FluxTransformer2DModel (flux),
CosmosTransformer3DModel (cosmos, Anima's DiT) or AutoencoderKLQwenImage's decode (qwenimage-vae), from a
diffusers source tree (``--diffusers SRC``, the folder holding ``diffusers/``, i.e. a checkout's ``src/``),
or the text tower of transformers' Qwen2_5_VLForConditionalGeneration (qwen25vl: Qwen2_5_VLTextModel) or
of Qwen3VLModel (qwen3vl: Qwen3VLTextModel) from a transformers source tree (``--transformers SRC``), on
whatever torch this Python has: Debian 12's CPU torch 1.13, or a GPU machine's CUDA wheel. The real
packages are imported through tools/refgen/upstream_env.py (and upstream_transformers.py), which stub
only the packages this Python lacks (hub downloads, images, accelerate, tokenizers, torchvision; numpy
where the wheel came without it) and, on torch < 2, supply SDPA, nn.RMSNorm and the few other APIs
they reach by their definitions. None of it touches the arithmetic; the JSON line lists every shim.
Nothing of diffusers or transformers is copied into this project. The towers run transformers' eager
attention (torch 1.13 has no SDPA for its default).

  upstream_forward.py write-inputs MODEL_DIR OUT --arch A [--latent H W] [--text L] --batch B [--seed S]
  upstream_forward.py run MODEL_DIR INPUTS... --arch A [--diffusers SRC] [--transformers SRC] [--device D]
                          [--dtype T] [--threads N] [--iters K] [--out-dir DIR] [--count-flops]

The inputs file holds the port's Step inputs, by the same names (docs/api.md): Z-Image `x`
[B, C, 1, H, W], `t` [B], `cap_feats` [B, L, D]; FLUX the keyword arguments of upstream's forward
(`hidden_states`, `encoder_hidden_states`, `pooled_projections`, `timestep`, `img_ids`, `txt_ids`,
and `guidance` when the model embeds it); Cosmos `hidden_states` [B, C, 1, H, W], `timestep` [B],
`encoder_hidden_states` [B, L, D] and the pipeline's zero `padding_mask` [1, 1, 8H, 8W]; a tower
`input_ids` [B, L] (no mask: every token real), its output the last hidden state after the final
norm; the VAE `latents` [B, 16, 1, h, w] in pipeline space, de-normalised as QwenImagePipeline does
before `decode` (its output clamped to [-1, 1], [B, 3, 1, 8h, 8w]). `run` loads the model once, then
for each inputs file runs one untimed forward and K timed ones, and prints one JSON line:
{"impl": "upstream", "arch", "device", "dtype", "torch", "threads", "load_seconds", "shims",
 "peak_rss_bytes", "device_baseline_used_bytes", "runs": [{"inputs", "batch", "seconds",
 "peak_vram_reserved_bytes", "peak_vram_allocated_bytes", "device_used_bytes", "flop"}]}.
The VRAM figures are the caching allocator's peaks over the timed forwards (nothing is given back
between them) and cudaMemGetInfo's used bytes after them; null on the CPU. `--count-flops` counts
the warm-up forward's work: every nn.Linear call as 2·M·K·N, every convolution as 2·(output
elements)·(C_in / groups)·(kernel volume), every attention through SDPA as 4·B·H·Sq·Sk·D (QKᵀ and
PV), from the shapes they are called with (the towers' eager attention is not counted). `--out-dir`
writes each run's output as upstream.<i>.safetensors (`out`, float32).
"""

import argparse
import contextlib
import importlib
import inspect
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "refgen"))
import upstream_env  # noqa: E402
import upstream_transformers  # noqa: E402
from safetensors_io import read_safetensors, read_safetensors_into, st_header, write_safetensors  # noqa: E402

ARCHES = {"z-image": "ZImageTransformer2DModel", "flux": "FluxTransformer2DModel",
          "cosmos": "CosmosTransformer3DModel", "qwenimage-vae": "AutoencoderKLQwenImage",
          "qwen25vl": "Qwen2_5_VLTextModel", "qwen3vl": "Qwen3VLTextModel"}
# The text towers: transformers' module, text config class, and the prefix of the tower's weights in the
# checkpoint the port writes (Qwen-Image's text_encoder/ and Krea 2's, as transformers saves them).
TOWERS = {"qwen25vl": ("qwen2_5_vl", "Qwen2_5_VLTextConfig", "model."),
          "qwen3vl": ("qwen3_vl", "Qwen3VLTextConfig", "language_model.")}
# The VAE's spatial factor: Cosmos's padding mask is made at pixel size.
VAE_FACTOR = 8
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def model_weight_files(model_dir):
    """name -> file for a diffusers or transformers model folder: one safetensors file, or shards with an
    index."""
    for single in ("diffusion_pytorch_model.safetensors", "model.safetensors"):
        path = os.path.join(model_dir, single)
        if os.path.exists(path):
            return {name: path for name in st_header(path)[0]}
        if os.path.exists(path + ".index.json"):
            with open(path + ".index.json") as f:
                return {name: os.path.join(model_dir, shard) for name, shard in json.load(f)["weight_map"].items()}
    raise SystemExit(f"{model_dir}: no diffusion_pytorch_model.safetensors or model.safetensors (or shards)")


def read_config(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        return json.load(f)


def upstream_class(arch, args):
    """Upstream's class for `arch`, imported from the source tree it lives in."""
    if arch in TOWERS:
        if not args.transformers:
            raise SystemExit(f"--arch {arch} needs --transformers")
        upstream_transformers.import_transformers(args.transformers)
        return getattr(importlib.import_module(f"transformers.models.{TOWERS[arch][0]}.modeling_{TOWERS[arch][0]}"),
                       ARCHES[arch])
    if not args.diffusers:
        raise SystemExit(f"--arch {arch} needs --diffusers")
    upstream_env.import_diffusers(args.diffusers, only_missing=True)  # puts `diffusers` on sys.path, shimmed
    if arch == "z-image":
        from diffusers.models.transformers import transformer_z_image as zi
        upstream_env.fix_z_image_for_torch1(zi)
        return zi.ZImageTransformer2DModel
    if arch == "cosmos":
        from diffusers.models.transformers import transformer_cosmos
        upstream_env.fix_cosmos_without_torchvision(transformer_cosmos)
        return transformer_cosmos.CosmosTransformer3DModel
    if arch == "qwenimage-vae":
        from diffusers.models.autoencoders import autoencoder_kl_qwenimage
        return autoencoder_kl_qwenimage.AutoencoderKLQwenImage
    from diffusers.models.transformers import transformer_flux
    return transformer_flux.FluxTransformer2DModel


# The random initialisers module constructors call (nn.Linear's, nn.Embedding's, the convolutions'):
# every parameter is overwritten from the file right after.
_INITIALISERS = ("uniform_", "normal_", "trunc_normal_", "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_",
                 "xavier_normal_")


@contextlib.contextmanager
def no_init():
    """Skips the modules' random init while constructing: initialising billions of values would only slow
    each run's start, and on torch < 2, where the model is built at float32 and cast, writing them would
    make the float32 copy resident (never written, its pages stay untouched and the cast reads zero pages)
    and count it in the peak RSS."""
    saved = {name: getattr(nn.init, name) for name in _INITIALISERS}
    for name in _INITIALISERS:
        setattr(nn.init, name, lambda tensor, *args, **kwargs: tensor)
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(nn.init, name, fn)


def construct(arch, cls, model_dir):
    """Upstream's model from config.json: a diffusers model from the keys its constructor takes, a tower
    from the text_config (or the top level of an older file), with eager attention and without
    transformers' own init (no_init_weights, as from_pretrained builds it)."""
    config = read_config(model_dir)
    if arch not in TOWERS:
        accepted = set(inspect.signature(cls.__init__).parameters) - {"self"}
        return cls(**{k: v for k, v in config.items() if k in accepted})
    module, config_class, _ = TOWERS[arch]
    text = config.get("text_config", config)
    text_config = getattr(importlib.import_module(f"transformers.models.{module}.configuration_{module}"),
                          config_class)(**text)
    text_config._attn_implementation = "eager"
    from transformers.modeling_utils import no_init_weights
    with no_init_weights():
        return cls(text_config)


def build_model(arch, cls, model_dir, device, dtype):
    """Upstream's model (construct), every parameter overwritten from the weights (strict: a missing or
    unexpected key is an error; a tower's keys without their checkpoint prefix), at `dtype` on `device`:
    built there directly where torch can (>= 2), so a 12 GB model never exists at float32."""
    place = device if hasattr(torch.device, "__enter__") else contextlib.nullcontext()
    with no_init(), place:
        model = construct(arch, cls, model_dir)
    model = model.to(device=device, dtype=dtype).eval()

    prefix = TOWERS[arch][2] if arch in TOWERS else ""
    files = {n[len(prefix):]: (n, p) for n, p in model_weight_files(model_dir).items() if n.startswith(prefix)}
    params = model.state_dict()  # shares storage with the parameters
    missing, unexpected = sorted(set(params) - set(files)), sorted(set(files) - set(params))
    if missing or unexpected:
        raise SystemExit(f"{model_dir}: weights do not match the model: missing {missing}, unexpected {unexpected}")
    for path in sorted({p for _, p in files.values()}):
        names = {key: name for name, (key, p) in files.items() if p == path}
        if device.type == "cpu":
            # Straight into each parameter: no second copy of the largest tensor (a tower's 1 GB embedding).
            read_safetensors_into(path, {key: params[name] for key, name in names.items()})
            continue
        with torch.no_grad():
            for key, value in read_safetensors(path, names=set(names), keep_dtype=True):
                params[names[key]].copy_(value)
    return model


def forward_fn(arch, model, inputs, device, dtype):
    """The forward as the pipelines call it, on inputs moved to the device at the compute dtype
    (ids stay float32, as upstream's pipelines make them; token ids stay int64)."""
    def on(name, keep=False):
        value = inputs[name].to(device)
        return value if keep else value.to(dtype)

    if arch == "z-image":
        x, t, cap = on("x"), on("t"), on("cap_feats")
        xs, caps = list(x.unbind(0)), list(cap.unbind(0))
        return lambda: torch.stack(model(xs, t, caps, return_dict=False)[0])
    if arch in TOWERS:
        ids = on("input_ids", keep=True)
        return lambda: model(input_ids=ids, use_cache=False).last_hidden_state
    if arch == "qwenimage-vae":
        # QwenImagePipeline's decode, its de-normalisation included.
        latents, config = on("latents"), model.config
        shape = (1, config.z_dim, 1, 1, 1)
        mean = torch.tensor(config.latents_mean).view(*shape).to(latents.device, latents.dtype)
        std = 1.0 / torch.tensor(config.latents_std).view(*shape).to(latents.device, latents.dtype)
        return lambda: model.decode(latents / std + mean, return_dict=False)[0]
    if arch == "cosmos":
        kwargs = {name: on(name) for name in ("hidden_states", "timestep", "encoder_hidden_states", "padding_mask")}
        return lambda: model(**kwargs, return_dict=False)[0]
    kwargs = {name: on(name) for name in ("hidden_states", "encoder_hidden_states", "pooled_projections", "timestep")}
    kwargs.update(img_ids=on("img_ids", keep=True), txt_ids=on("txt_ids", keep=True))
    kwargs["guidance"] = on("guidance") if "guidance" in inputs else None
    return lambda: model(**kwargs, return_dict=False)[0]


class FlopCounter:
    """Counts the work of the forwards run inside it: nn.Linear calls (2·M·K·N), convolutions
    (2·output elements·C_in/groups·kernel volume; counted with the GEMMs) and attention through
    F.scaled_dot_product_attention (4·B·H·Sq·Sk·D), which diffusers' native backend calls by name."""

    def __init__(self, model):
        self.model, self.gemm, self.attention = model, 0, 0

    def __enter__(self):
        def on_linear(module, args, _out):
            self.gemm += 2 * args[0].numel() * module.out_features

        def on_conv(module, _args, out):
            kernel = math.prod(module.kernel_size)
            self.gemm += 2 * out.numel() * (module.in_channels // module.groups) * kernel

        self.hooks = [m.register_forward_hook(on_linear) for m in self.model.modules() if isinstance(m, nn.Linear)]
        self.hooks += [m.register_forward_hook(on_conv) for m in self.model.modules()
                       if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d))]
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
    model = build_model(args.arch, upstream_class(args.arch, args), args.model_dir, device, dtype)
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
    tokens (a tower's: random ids over its vocabulary), batch B (2 for classifier-free guidance), at
    t = 0.5."""
    config = read_config(args.model_dir)
    g = torch.Generator().manual_seed(args.seed)
    needs = {"text": args.arch != "qwenimage-vae", "latent": args.arch not in TOWERS}
    for what, needed in needs.items():
        if needed and getattr(args, what) is None:
            raise SystemExit(f"--arch {args.arch} needs --{what}")
    (h, w), b, n = args.latent or (0, 0), args.batch, args.text
    t = torch.full([b], 0.5)
    if args.arch in TOWERS:
        vocab = config.get("text_config", config)["vocab_size"]
        tensors = {"input_ids": torch.randint(0, vocab, (b, n), generator=g)}
    elif args.arch == "qwenimage-vae":
        tensors = {"latents": torch.randn(b, config["z_dim"], 1, h, w, generator=g)}
    elif args.arch == "cosmos":
        # The modular pipeline's padding mask: zeros at pixel size.
        tensors = {"hidden_states": torch.randn(b, config["in_channels"], 1, h, w, generator=g), "timestep": t,
                   "encoder_hidden_states": torch.randn(b, n, config["text_embed_dim"], generator=g),
                   "padding_mask": torch.zeros(1, 1, h * VAE_FACTOR, w * VAE_FACTOR)}
    elif args.arch == "z-image":
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
    r = sub.add_parser("run", help="time upstream forwards on a diffusers or transformers model folder")
    r.add_argument("model_dir")
    r.add_argument("inputs", nargs="+")
    r.add_argument("--arch", choices=sorted(ARCHES), required=True)
    r.add_argument("--diffusers", help="the folder holding diffusers/ (a checkout's src/): every arch but the "
                                       "towers")
    r.add_argument("--transformers", help="the folder holding transformers/ (a checkout's src/): the towers")
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
    w.add_argument("--latent", type=int, nargs=2, metavar=("H", "W"), help="latent rows and columns (not a tower)")
    w.add_argument("--text", type=int, help="text tokens (not the VAE)")
    w.add_argument("--batch", type=int, default=1)
    w.add_argument("--seed", type=int, default=0)
    w.set_defaults(fn=cmd_write_inputs)
    args = p.parse_args(argv)
    args.fn(args)


if __name__ == "__main__":
    main()
