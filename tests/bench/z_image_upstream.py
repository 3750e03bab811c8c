#!/usr/bin/env python3
"""Upstream half of the Z-Image CPU benchmark: diffusers' own ZImageTransformer2DModel.

Runs the transformer forward from a diffusers checkout (``--diffusers ROOT``, the folder holding
``src/diffusers``) on an old CPU torch (Debian 12's python3-torch, 1.13), which cannot import the
diffusers package as a whole. Only the files the model needs are loaded, by path, under a private
package name; everything else they import is replaced by the small shims below, none of which touches
the arithmetic (each says why). Nothing of diffusers is copied into this project.

  z_image_upstream.py run MODEL_DIR INPUTS --threads N --iters K [--out OUT] --diffusers ROOT
  z_image_upstream.py write-inputs INPUTS --latent H W --caption L --cap-dim D --channels C --seed S

``run`` prints one JSON line: {"impl": "upstream", "threads", "seconds", "peak_rss_bytes", "torch"}.
Needs only torch, numpy and the standard library.
"""

import argparse
import functools
import importlib.util
import inspect
import json
import os
import re
import sys
import time
import types
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "refgen"))
from safetensors_io import read_safetensors, st_header, write_safetensors  # noqa: E402
from upstream_env import fix_z_image_for_torch1, limit_openblas_threads, sdpa_reference  # noqa: E402


def model_weight_files(model_dir):
    """name -> file for a diffusers model folder: one safetensors file, or shards with an index."""
    single = os.path.join(model_dir, "diffusion_pytorch_model.safetensors")
    if os.path.exists(single):
        return {name: single for name in st_header(single)[0]}
    with open(single + ".index.json") as f:
        return {name: os.path.join(model_dir, shard) for name, shard in json.load(f)["weight_map"].items()}


# ---------------------------------------------------------------------------------------------------
# Import shims. transformer_z_image.py is loaded as `_dfu.models.transformers.transformer_z_image`;
# its relative imports resolve against this private `_dfu` package tree (never the name `diffusers`,
# so an installed diffusers cannot get mixed in).

_PKG = "_dfu"


def dispatch_attention_fn(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                          enable_gqa=False, attention_kwargs=None, *, backend=None, parallel_config=None):
    """diffusers' attention_dispatch.py `_native_attention` (the default backend): inputs are
    [B, S, H, D]; a 2-D [B, S_kv] mask becomes [B, 1, 1, S_kv]; permute to [B, H, S, D], SDPA, permute
    back. The real module needs torch >= 2 at import; this is its native path line for line, and the
    only backend this benchmark asks for (anything else is refused, not silently replaced)."""
    if backend not in (None, "native") or parallel_config is not None or attention_kwargs or enable_gqa:
        raise NotImplementedError("only diffusers' native attention backend is shimmed")
    if (attn_mask is not None and attn_mask.ndim == 2 and attn_mask.shape[0] == query.shape[0]
            and attn_mask.shape[1] == key.shape[1]):
        attn_mask = attn_mask.unsqueeze(1).unsqueeze(1)
    query, key, value = (x.permute(0, 2, 1, 3) for x in (query, key, value))
    kwargs = {"scale": scale} if scale is not None else {}
    out = F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                                         is_causal=is_causal, **kwargs)
    return out.permute(0, 2, 1, 3)


def register_to_config(init):
    """configuration_utils.register_to_config only records the constructor's arguments as
    `self.config` (for saving and for `self.config.x` reads); it never alters them."""
    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        init(self, *args, **kwargs)
        bound = inspect.signature(init).bind(self, *args, **kwargs)
        bound.apply_defaults()
        self.config = types.SimpleNamespace(**{k: v for k, v in bound.arguments.items() if k != "self"})
    return wrapper


def _unused(name):
    """A placeholder for a name a loaded file imports but Z-Image never reaches (other models' layers
    in normalization.py / attention_processor.py); using it fails loudly instead of computing."""
    class Unused:
        def __init__(self, *args, **kwargs):
            raise NotImplementedError(f"{name} is shimmed out: not used by ZImageTransformer2DModel")
    Unused.__name__ = name
    return Unused


def _is_torch_version(op, version):
    """utils.is_torch_version: compares torch's numeric release with `op` (only gates code paths)."""
    def parse(v):
        return tuple(int(p) for p in re.match(r"\d+(?:\.\d+)*", v).group(0).split(".")[:3])
    mine = parse(torch.__version__)
    return {">=": mine >= parse(version), ">": mine > parse(version), "<": mine < parse(version),
            "<=": mine <= parse(version), "==": mine == parse(version), "!=": mine != parse(version)}[op]


def _module(name, package=False, **attrs):
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    if package:
        mod.__path__ = []  # lets `from .sub import x` resolve `sub` through sys.modules
    sys.modules[name] = mod
    return mod


def _load_file(name, path, patch=None):
    """Executes the real diffusers source file `path` as module `name` (optionally with a textual
    `patch(source) -> source`)."""
    with open(path, encoding="utf-8") as f:
        source = f.read()
    if patch is not None:
        source = patch(source)
    spec = importlib.util.spec_from_loader(name, loader=None, origin=path)
    mod = importlib.util.module_from_spec(spec)
    mod.__file__ = path
    sys.modules[name] = mod
    exec(compile(source, path, "exec"), mod.__dict__)
    return mod


def load_upstream_class(diffusers_root):
    """Returns upstream's ZImageTransformer2DModel class, loaded from `diffusers_root`/src/diffusers."""
    src = os.path.join(diffusers_root, "src", "diffusers")
    if not os.path.exists(os.path.join(src, "models", "transformers", "transformer_z_image.py")):
        raise SystemExit(f"--diffusers {diffusers_root}: no src/diffusers/models/transformers/transformer_z_image.py")
    if not hasattr(F, "scaled_dot_product_attention"):
        # The attention processor refuses to construct without it (a torch >= 2 capability check);
        # dispatch_attention_fn above calls it, so it must compute exactly SDPA: see sdpa_reference.
        F.scaled_dot_product_attention = sdpa_reference

    import logging
    _module(_PKG, package=True)
    # ConfigMixin: config (de)serialisation only; the loaders' mixins add LoRA / single-file loading
    # methods, none called here; maybe_allow_in_graph is a torch.compile hint (identity).
    _module(f"{_PKG}.configuration_utils", ConfigMixin=type("ConfigMixin", (), {}),
            register_to_config=register_to_config)
    _module(f"{_PKG}.loaders", FromOriginalModelMixin=type("FromOriginalModelMixin", (), {}),
            PeftAdapterMixin=type("PeftAdapterMixin", (), {}))
    # Capability probes: no NPU / XLA / xformers here, so the files take their plain-torch branches.
    probes = dict(is_torch_npu_available=lambda: False, is_torch_xla_available=lambda: False,
                  is_xformers_available=lambda: False, is_torch_xla_version=lambda *a: False,
                  is_torch_version=_is_torch_version, maybe_allow_in_graph=lambda cls: cls,
                  logging=types.SimpleNamespace(get_logger=logging.getLogger),
                  deprecate=lambda *a, **k: None)
    _module(f"{_PKG}.utils", package=True, **probes)
    _module(f"{_PKG}.utils.torch_utils", **probes)
    _module(f"{_PKG}.utils.import_utils", **probes)
    _module(f"{_PKG}.image_processor", IPAdapterMaskProcessor=_unused("IPAdapterMaskProcessor"))
    _module(f"{_PKG}.models", package=True)
    _module(f"{_PKG}.models.activations", get_activation=_unused("get_activation"))
    _module(f"{_PKG}.models.embeddings", CombinedTimestepLabelEmbeddings=_unused("CombinedTimestepLabelEmbeddings"),
            PixArtAlphaCombinedTimestepSizeEmbeddings=_unused("PixArtAlphaCombinedTimestepSizeEmbeddings"))
    # ModelMixin adds loading/saving/dtype helpers on top of nn.Module; the forward never uses them.
    _module(f"{_PKG}.models.modeling_utils", ModelMixin=nn.Module)

    @dataclass
    class Transformer2DModelOutput:  # a plain container (we call with return_dict=False anyway)
        sample: object
    _module(f"{_PKG}.models.modeling_outputs", Transformer2DModelOutput=Transformer2DModelOutput)
    _module(f"{_PKG}.models.attention_dispatch", dispatch_attention_fn=dispatch_attention_fn)
    _module(f"{_PKG}.models.transformers", package=True)

    # The real files: RMSNorm (normalization.py) and Attention (attention_processor.py) are upstream's
    # own code, so their math (float32 variance, weight dtype handling, q/k/v/out layout) is upstream's.
    models = os.path.join(src, "models")
    _load_file(f"{_PKG}.models.normalization", os.path.join(models, "normalization.py"))
    _load_file(f"{_PKG}.models.attention_processor", os.path.join(models, "attention_processor.py"))
    zi = _load_file(f"{_PKG}.models.transformers.transformer_z_image",
                    os.path.join(models, "transformers", "transformer_z_image.py"))
    fix_z_image_for_torch1(zi)
    return zi.ZImageTransformer2DModel


# ---------------------------------------------------------------------------------------------------


def build_model(cls, model_dir):
    """Upstream model from config.json (only the keys its constructor takes), float32, with every
    parameter overwritten from the weights (strict: any missing or unexpected key is an error)."""
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self"}
    # nn.Linear's random init is skipped while constructing: the strict load below overwrites every
    # parameter, and initialising ~0.4 G values would only slow each run's start.
    reset = nn.Linear.reset_parameters
    nn.Linear.reset_parameters = lambda self: None
    try:
        model = cls(**{k: v for k, v in config.items() if k in accepted})
    finally:
        nn.Linear.reset_parameters = reset
    model = model.to(torch.float32).eval()

    files = model_weight_files(model_dir)
    params = model.state_dict()  # shares storage with the parameters
    missing, unexpected = sorted(set(params) - set(files)), sorted(set(files) - set(params))
    if missing or unexpected:
        raise SystemExit(f"{model_dir}: weights do not match the model: missing {missing}, unexpected {unexpected}")
    with torch.no_grad():
        for path in sorted(set(files.values())):
            for name, value in read_safetensors(path, names={n for n, p in files.items() if p == path}):
                if params[name].shape != value.shape:
                    raise SystemExit(f"{name}: shape {list(value.shape)} in the file, "
                                     f"{list(params[name].shape)} in the model")
                params[name].copy_(value)
    return model


def peak_rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return None


def cmd_run(args):
    torch.set_num_threads(args.threads)
    limit_openblas_threads(args.threads)
    model = build_model(load_upstream_class(args.diffusers), args.model_dir)
    inputs = dict(read_safetensors(args.inputs))
    x, t, cap = inputs["x"].float(), inputs["t"].float(), inputs["cap_feats"].float()

    # As ZImagePipeline calls it: lists of per-item [C, F, H, W] latents and [L, D] captions, t [B].
    def forward():
        return model([x], t, [cap], return_dict=False)[0][0]

    seconds = []
    with torch.no_grad():
        out = forward()  # warm-up, untimed
        for _ in range(args.iters):
            start = time.perf_counter()
            out = forward()
            seconds.append(time.perf_counter() - start)
    if args.out:
        write_safetensors(args.out, {"out": out})
    print(json.dumps({"impl": "upstream", "threads": args.threads, "seconds": seconds,
                      "peak_rss_bytes": peak_rss_bytes(), "torch": torch.__version__}), flush=True)


def cmd_write_inputs(args):
    torch.manual_seed(args.seed)
    h, w = args.latent
    x = torch.randn(args.channels, 1, h, w, dtype=torch.float32)
    cap = torch.randn(args.caption, args.cap_dim, dtype=torch.float32)
    write_safetensors(args.inputs, {"x": x, "t": torch.full([1], 0.5), "cap_feats": cap})


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="time upstream forwards on a diffusers model folder")
    r.add_argument("model_dir")
    r.add_argument("inputs")
    r.add_argument("--threads", type=int, required=True)
    r.add_argument("--iters", type=int, default=1)
    r.add_argument("--out")
    r.add_argument("--diffusers", required=True, help="diffusers checkout root (holds src/diffusers)")
    r.set_defaults(fn=cmd_run)
    w = sub.add_parser("write-inputs", help="write random benchmark inputs")
    w.add_argument("inputs")
    w.add_argument("--latent", type=int, nargs=2, metavar=("H", "W"), required=True)
    w.add_argument("--caption", type=int, required=True)
    w.add_argument("--cap-dim", type=int, required=True)
    w.add_argument("--channels", type=int, default=16)
    w.add_argument("--seed", type=int, default=0)
    w.set_defaults(fn=cmd_write_inputs)
    args = p.parse_args(argv)
    args.fn(args)


if __name__ == "__main__":
    main()
