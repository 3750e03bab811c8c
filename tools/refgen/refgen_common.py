"""Pieces every reference generator here shares: seeded BF16-rounded random weights, the FP8
selections (layerwise casting), key maps through upstream converters, exact-equality checks, JSON / weight writing, provenance, and the fixture's stats.json + README.md.
Not here: anything model-specific (see <model>_refgen.py)."""

import copy
import json
import os
import subprocess

import numpy as np
import torch

import fp8_e4m3
from safetensors_io import read_safetensors, write_safetensors  # noqa: F401  (re-exported)


def _linear_rule(module, pname, shape):
    """FLUX / Z-Image: Linear weights N(0, clamp(0.6/sqrt(fan_in), 0.02, 0.1)^2), biases N(0, 0.05^2),
    norm weights N(1, 0.15^2), pad tokens N(0, 0.5^2)."""
    if pname.endswith("pad_token"):
        return 0.0, 0.5
    if isinstance(module, torch.nn.Linear):
        fan_in = shape[1] if pname == "weight" else None
        return (0.0, float(np.clip(0.6 / np.sqrt(fan_in), 0.02, 0.1))) if fan_in else (0.0, 0.05)
    if "Norm" in type(module).__name__ and pname == "weight":
        return 1.0, 0.15
    if "Norm" in type(module).__name__ and pname == "bias":
        return 0.0, 0.05
    return None


def _conv_rule(module, pname, shape):
    """VAE: conv / linear weights N(0, 1/fan_in), biases N(0, 0.05^2), GroupNorm weight N(1, 0.15^2),
    bias N(0, 0.1^2)."""
    if isinstance(module, (torch.nn.Conv2d, torch.nn.Linear)):
        return (0.0, 1.0 / np.sqrt(int(np.prod(shape[1:])))) if pname == "weight" else (0.0, 0.05)
    if isinstance(module, torch.nn.GroupNorm):
        return (1.0, 0.15) if pname == "weight" else (0.0, 0.1)
    return None


RULES = {"linear": _linear_rule, "conv": _conv_rule}


def randomize_bf16(model, generator, rule="linear"):
    """Overwrites every parameter, in named_parameters order, with a normal draw from `generator`
    (mean / std from RULES[rule] by the owning module's type), rounded to BF16 and kept as float32.
    Raises SystemExit for a parameter the rule does not cover."""
    modules = dict(model.named_modules())
    with torch.no_grad():
        for name, p in model.named_parameters():
            owner, _, pname = name.rpartition(".")
            ms = RULES[rule](modules[owner], pname, list(p.shape))
            if ms is None:
                raise SystemExit(f"{name}: no init rule for {type(modules[owner]).__name__}.{pname}")
            draw = torch.randn(p.shape, generator=generator, dtype=torch.float32) * ms[1] + ms[0]
            p.copy_(draw.to(torch.bfloat16).to(torch.float32))


def key_map_through_upstream(convert, original):
    """original key -> the diffusers keys upstream's converter puts its values into (each tensor is
    filled with its own index, so every converted tensor names its source)."""
    names = sorted(original)
    tagged = {n: torch.full_like(original[n], float(i)) for i, n in enumerate(names)}
    out = {}
    for d, t in convert(dict(tagged)).items():
        for v in torch.unique(t).tolist():
            out.setdefault(names[int(v)], []).append(d)
    return {k: sorted(v) for k, v in sorted(out.items())}


def layerwise_casting_selection(model):
    """The parameters upstream's enable_layerwise_casting stores in low precision (probed with fp16
    storage on a copy), and the Linear weights among them."""
    probe = copy.deepcopy(model)
    probe.enable_layerwise_casting(storage_dtype=torch.float16, compute_dtype=torch.float32)
    lwc = [n for n, p in probe.named_parameters() if p.dtype == torch.float16]
    linear = {n + ".weight" for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    return lwc, [n for n in lwc if n in linear]


def with_rounded(model, names):
    """A copy of `model` whose parameters `names` went through float8_e4m3fn and back."""
    out = copy.deepcopy(model)
    params = dict(out.named_parameters())
    with torch.no_grad():
        for n in names:
            params[n].copy_(torch.from_numpy(fp8_e4m3.round_trip(params[n].numpy())))
    return out


def max_diff(a, b):
    return (a.to(torch.float64) - b.to(torch.float64)).abs().max().item() if a.numel() else 0.0


def require_same(got, want, what):
    """Raises SystemExit unless the two name -> tensor dicts hold the same names, shapes and bits."""
    if set(got) != set(want):
        raise SystemExit(f"{what}: names differ: {sorted(set(got) ^ set(want))[:8]}")
    for k in want:
        if got[k].shape != want[k].shape or not torch.equal(got[k].to(want[k].dtype), want[k]):
            raise SystemExit(f"{what}: {k} differs")


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1 if os.path.basename(path) == "variant.json" else 2, sort_keys=True)


def write_weights(path, state):
    """Writes a BF16 weight file (the values must already be BF16) and checks it reads back exactly."""
    write_safetensors(path, state, {k: "BF16" for k in state})
    require_same(dict(read_safetensors(path)), state, path)


def provenance(diffusers_src, shims, commit=None):
    """Upstream's commit (`commit`, else git's HEAD of the source tree), versions and shims."""
    if commit is None:
        head = subprocess.run(["git", "-C", diffusers_src, "rev-parse", "HEAD"], capture_output=True, text=True)
        commit = head.stdout.strip() if head.returncode == 0 else "unknown (not a git checkout; pass --commit)"
    import diffusers
    return {"commit": commit,
            "diffusers_version": diffusers.__version__, "torch": torch.__version__, "numpy": np.__version__,
            "shims": list(shims)}


def finish(out, stats, title, variant, generator_path):
    """Writes stats.json (with the files' sizes) and a README.md naming the generator, the upstream
    commit, the shims, the variant and the measured tolerances."""
    files = {}
    for root, _, names in os.walk(out):
        for n in names:
            rel = os.path.relpath(os.path.join(root, n), out)
            if rel not in ("README.md", "stats.json"):
                files[rel] = os.path.getsize(os.path.join(root, n))
    stats["files"] = dict(sorted(files.items()))
    write_json(os.path.join(out, "stats.json"), stats)
    numbers = {k: v for k, v in stats.items() if isinstance(v, float)}
    lines = [f"# {title} reference fixture (variant {variant['name']})", "",
             f"Written by `tools/refgen/{os.path.basename(generator_path)} --variant {variant['name']}` running upstream "
             f"diffusers @ `{stats['commit']}` ({stats['diffusers_version']}) on CPU with torch {stats['torch']}, "
             f"seed {variant['seed']}. Same layout as the shared fixture of this model (see its README for the "
             "meaning of every file and tensor); only sizes, seeds and options differ (variant.json).", "",
             "Shims installed to run upstream on this torch (none changes the math):", ""]
    lines += [f"- {s}" for s in stats["shims"]]
    lines += ["", "## Variant", "", "```", json.dumps(variant, indent=1, sort_keys=True), "```", "",
              "## Files", "", "| file | bytes |", "|---|---|"]
    lines += [f"| `{k}` | {v:,} |" for k, v in stats["files"].items()]
    lines += ["", "## io.safetensors", "", "| tensor | shape |", "|---|---|"]
    lines += [f"| `{k}` | {'x'.join(map(str, v if isinstance(v, list) else v['shape'])) or 'scalar'} |"
              for k, v in stats["io"].items()]
    lines += ["", "## Measured (max abs diff unless named otherwise; all numbers in stats.json)", "",
              "| quantity | value |", "|---|---|"]
    lines += [f"| {k} | {v:.3g} |" for k, v in numbers.items()]
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
