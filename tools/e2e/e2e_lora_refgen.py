#!/usr/bin/env python3
"""Upstream references for Generate with LoRA adapters on the tiny FLUX.1
pipeline folder: diffusers' own FluxPipeline __call__ after what
load_lora_weights + set_adapters do, one adapter and two stacked.

The folder OUT/flux-pipe/pipe/ (FluxPipeline) is built or reused exactly as
e2e_modes_refgen.py does it, through the shared e2e_pipe_refgen.py
(--shared-refgen; default ../shared/refgen beside the repository). Two random
LoRAs for its transformer are written beside it, in the family folder (the
daemon's models directory there), so a case names them by file name:
  lora_a.safetensors  diffusers/PEFT layout (transformer.<module>.lora_A.weight
                      / .lora_B.weight), rank 4, with PEFT's config in the
                      header (__metadata__ "lora_adapter_metadata": r 4,
                      lora_alpha 6, so scale 1.5), on both double blocks' attn
                      to_q/to_k/to_v/to_out.0 and ff.net.0.proj/ff.net.2, both
                      single blocks' to_q/to_k/to_v/proj_mlp/proj_out, and the
                      final proj_out (without it the blocks' changes barely
                      reach this random model's image)
  lora_b.safetensors  kohya layout (lora_unet_<original name, flattened>
                      .lora_down.weight / .lora_up.weight / .alpha), rank 2,
                      alpha 16 (folded by upstream's converter: scale 8), on
                      double_blocks_1_img_attn_qkv (fused: split by the
                      converter), double_blocks_0_img_attn_proj,
                      double_blocks_1_txt_attn_proj, double_blocks_0_txt_mlp_0,
                      double_blocks_0_img_mod_lin, single_blocks_0_modulation_lin
                      and single_blocks_1_linear2; five of its modules are
                      lora_a's too. Not the final layer: upstream's kohya
                      converter emits final_layer_* (like img_in, txt_in, ...)
                      without the "transformer." prefix and unscaled, so
                      load_lora_weights would not apply it
Both are BF16 with values of 5 significant bits, drawn and written by the
shared lora_refgen.py (make_lora, build_files), so that every alpha folding
is exact. Each file is read back and converted by upstream's own
FluxLoraLoaderMixin.lora_state_dict, and PEFT's r / lora_alpha are derived
as load_lora_adapter does (lora_refgen.upstream_convert); peft is not
installed, so the adapters are merged as PEFT's merge does it, W' = W +
sum of weight * (lora_alpha / r) * (B @ A), accumulated in float64 and cast
to float32 (lora_refgen.merged_weights, model_with). The pipeline then runs
float32 on the CPU, 1 thread, with the daemon comparing at FP8 off.

Beside modes_cases.json it writes (never over another script's files):
  lora_a.safetensors, lora_b.safetensors   the adapters above
  lora_cases.json        modes_cases.json's schema (e2e_modes_refgen.py's
                         docstring), plus "loras" (per file: layout, rank,
                         alpha, PEFT's r / lora_alpha after conversion, the
                         modules it changes) and per case "adapters":
                         [{"path": file name, "weight": w}, ...], what a
                         client sends, and stats
  lora_ref.safetensors   per case: image_u8 [H, W, 3] uint8 (output_type
                         "pil"), initial_latents and final_latents
                         [1, 16, h, w]
Each case asserts that its image is more than a few levels from the same
call without adapters, else matching it would prove nothing about the
LoRA; a stack's, likewise from the image without its last adapter.
Measured (largest / mean 8-bit level difference; largest |W' - W| / |W|
over the changed Linears, Frobenius norms):
  case            adapters                     vs no LoRA   vs one less  |dW|/|W|
  flux-lora-one   lora_a 1.0                   45 / 5.12                 0.33
  flux-lora-two   lora_a 0.7, lora_b -0.3      34 / 3.68    7 / 0.81     0.40
  flux-lora-half  lora_a 0.5 (64x64, seed 13)  20 / 2.23                 0.17
  flux-lora-te    lora_te 0.8 (seed 17)        16 / 1.96    15 / 1.86    0.68
(flux-lora-te's second column: against the same call without the file's
text-encoder part.) lora_te.safetensors is PEFT keys without alpha (scale
1), rank 4: transformer_blocks.0.attn.to_out.0 and CLIP's first two
layers' q/k/v/out_proj and fc1/fc2 (text_encoder.text_model...), which
load_lora_weights applies to the pipeline's text_encoder; the merge here
folds them into a float32 copy of CLIP the same way.

Usage (Debian python3-torch 1.13, no pip; about 10 s on 2 cores), after
or without the other scripts' runs into the same OUT:
  /usr/bin/python3 tools/e2e/e2e_lora_refgen.py --transformers-src TRANSFORMERS_V4_57_SRC \\
      --diffusers-src DIFFUSERS_SRC --out-root OUT [--shared-refgen DIR] [--case NAME]
"""
import argparse
import copy
import importlib
import json
import os
import re
import sys
import types

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_modes_refgen as modes  # noqa: E402

# (alpha / rank) * B @ A then has entries of std LORA_STD**2 * alpha / sqrt(rank):
# about 0.015 for lora_a, a third of the weights it changes at most (their std
# is 0.05-0.1); lora_b's is 4x that, so that it still shows at weight -0.3.
LORA_STD = 0.07
MANTISSA_BITS = 5
LORAS = {  # file name -> what lora_refgen.make_lora / build_files take ("targets": regexes of module names)
    "lora_a.safetensors": dict(format="peft", rank=4, alpha=6.0, seed=7501, targets=[
        r"^transformer_blocks\.\d+\.attn\.(to_[qkv]|to_out\.0)$", r"^transformer_blocks\.\d+\.ff\.net\.(0\.proj|2)$",
        r"^single_transformer_blocks\.\d+\.(attn\.to_[qkv]|proj_mlp|proj_out)$", r"^proj_out$"]),
    "lora_b.safetensors": dict(format="kohya", rank=2, alpha=16.0, seed=7502, targets=[
        r"^transformer_blocks\.1\.attn\.to_[qkv]$", r"^transformer_blocks\.0\.attn\.to_out\.0$",
        r"^transformer_blocks\.1\.attn\.to_add_out$", r"^transformer_blocks\.0\.ff_context\.net\.0\.proj$",
        r"^single_transformer_blocks\.1\.proj_out$", r"^transformer_blocks\.0\.norm1\.linear$",
        r"^single_transformer_blocks\.0\.norm\.linear$"]),
}
# A case whose image moves less than this from the one without (some of) its
# adapters tests nothing at the comparison's 1 level.
MIN_MAX_LEVELS, MIN_MEAN_LEVELS = 4, 0.5


def lora_case(name, adapters, **kw):
    """One FLUX txt2img __call__ (sizes, steps and guidance as the other
    FLUX cases) with `adapters` [(file name, weight)] loaded and set."""
    c = modes.case(name, "txt2img", modes.F_PROMPT, guidance_scale=4.0, **kw)
    return dict(c, adapters=[{"path": path, "weight": weight} for path, weight in adapters])


# A file with text-encoder modules (PEFT keys, no alpha: scale 1): CLIP's
# attention and MLP in its first two layers, which load_lora_weights applies
# to the pipeline's text_encoder, beside one transformer module.
TE_LORA = "lora_te.safetensors"
TE_RANK, TE_SEED, TE_STD = 4, 7503, 0.2
TE_TARGETS = r"^text_model\.encoder\.layers\.[01]\.(self_attn\.(q|k|v|out)_proj|mlp\.fc[12])$"
TE_DENOISER_MODULE = "transformer_blocks.0.attn.to_out.0"

CASES = [
    lora_case("flux-lora-one", [("lora_a.safetensors", 1.0)]),
    lora_case("flux-lora-two", [("lora_a.safetensors", 0.7), ("lora_b.safetensors", -0.3)]),
    lora_case("flux-lora-half", [("lora_a.safetensors", 0.5)], width=64, height=64, seed=13),
    lora_case("flux-lora-te", [(TE_LORA, 0.8)], seed=17),
]


def quantized(shape, generator, std):
    """Normal values of `std` rounded to MANTISSA_BITS bits, exact in bf16."""
    x = torch.randn(shape, generator=generator, dtype=torch.float64) * std
    m, e = np.frexp(x.numpy())
    return torch.from_numpy(np.ldexp(np.round(m * 2 ** MANTISSA_BITS) / 2 ** MANTISSA_BITS, e))


def write_te_lora(base_pipe, path):
    """Writes TE_LORA and returns ({transformer module: B @ A}, {CLIP module:
    B @ A}), float64: the scale is 1 (no alpha, no metadata)."""
    g = torch.Generator().manual_seed(TE_SEED)
    tensors, denoiser, encoder = {}, {}, {}
    targets = [(n, m) for n, m in base_pipe.text_encoder.named_modules() if re.match(TE_TARGETS, n)]
    targets.append((TE_DENOISER_MODULE, dict(base_pipe.transformer.named_modules())[TE_DENOISER_MODULE]))
    for name, module in targets:
        prefix = "transformer." if name == TE_DENOISER_MODULE else "text_encoder."
        a = quantized((TE_RANK, module.in_features), g, TE_STD)
        b = quantized((module.out_features, TE_RANK), g, TE_STD)
        tensors[f"{prefix}{name}.lora_A.weight"] = ("F32", a.float().numpy())
        tensors[f"{prefix}{name}.lora_B.weight"] = ("F32", b.float().numpy())
        (denoiser if prefix == "transformer." else encoder)[name] = b @ a
    import zimage_refgen as zr  # the shared writer, beside lora_refgen
    zr.st_save(path, tensors)
    return denoiser, encoder


def te_converted(lr, up_lora, path, denoiser, encoder):
    """Checks that upstream's conversion keeps TE_LORA's keys as written (a
    PEFT file passes through), so the merge below is what it loads."""
    sd = lr.to_torch(lr.zr.st_load(path)[0])  # as lora_refgen.upstream_convert reads a file
    sd = up_lora.lp.FluxLoraLoaderMixin.lora_state_dict(dict(sd), return_alphas=True, return_lora_metadata=True)[0]
    expected = {f"{'transformer' if n in denoiser else 'text_encoder'}.{n}.lora_{ab}.weight"
                for n in list(denoiser) + list(encoder) for ab in "AB"}
    assert set(sd) == expected, sorted(set(sd) ^ expected)


def with_te(base_pipe, encoder_deltas, weight):
    """A float32 copy of the pipeline's CLIP with `weight` x the deltas merged
    (float64, then float32), as PEFT merges a text encoder's LoRA."""
    te = copy.deepcopy(base_pipe.text_encoder)
    modules = dict(te.named_modules())
    with torch.no_grad():
        for n, d in encoder_deltas.items():
            w = modules[n].weight
            w.copy_((w.double() + weight * d).float())
    return te


def import_lora_upstream(shared_folder):
    """lora_refgen (the shared LoRA generator, beside e2e_pipe_refgen.py) and
    the upstream modules its upstream_convert uses. Call after the shared
    script's import_upstream, whose diffusers (with transformers) they are."""
    sys.path.insert(0, os.path.abspath(shared_folder))
    lr = importlib.import_module("lora_refgen")
    modules = {"lp": "loaders.lora_pipeline", "lb": "loaders.lora_base",
               "lora_conversion_utils": "loaders.lora_conversion_utils", "peft_utils": "utils.peft_utils"}
    return lr, types.SimpleNamespace(**{k: importlib.import_module("diffusers." + m) for k, m in modules.items()})


def write_lora(lr, transformer, path, spec):
    """Draws the LoRA of `spec` for `transformer` and writes it in its layout;
    returns {module: (alpha / rank) * B @ A} in float64 from the drawn values."""
    lora = lr.make_lora("flux", transformer, spec, {"lora_std": LORA_STD, "mantissa_bits": MANTISSA_BITS})
    tensors, meta, _ = lr.build_files("flux", dict(spec, formats=[spec["format"]]), lora, None)[spec["format"]]
    lr.zr.st_save(path, tensors, meta)
    scale = spec["alpha"] / spec["rank"]
    return {n: (B @ g["A"]) * scale for g in lora.values() for (_, n), B in zip(g["parts"], g["Bs"])}


def converted_deltas(lr, up, shared, transformer, path, drawn):
    """What upstream makes of the file on disk: {module: (lora_alpha / r) *
    B' @ A'} of the converted tensors, float64, and PEFT's config; asserts
    it is exactly the drawn LoRA (the conversion and folding lost nothing)."""
    # upstream_convert runs the kohya converter with its linear1 split sized for
    # the tiny model; no file here has a linear1, so nothing depends on that.
    _, tsd, cfg, other, _ = lr.upstream_convert(up, "flux", path, shared.FLUX_TRANSFORMER, [])
    assert not other, f"{path}: keys outside the transformer: {other}"
    deltas, _ = lr.deltas_from(tsd, cfg, transformer)
    assert sorted(deltas) == sorted(drawn), (path, sorted(set(deltas) ^ set(drawn)))
    assert all(torch.equal(deltas[n], drawn[n]) for n in drawn), f"{path}: converted delta != drawn delta"
    return deltas, cfg


def call_with(lr, up, shared, base_pipe, deltas, c, adapters, te_deltas=None):
    """((uint8 image, initial latents, final latents), merged weights) of
    case `c` with `adapters` merged into a float32 copy of the transformer
    (and TE_LORA's text-encoder part into one of CLIP, unless te_deltas is
    given as {})."""
    base = base_pipe.transformer
    merged = lr.merged_weights(base, deltas, [(a["path"], a["weight"]) for a in adapters])
    components = dict(base_pipe.components, transformer=lr.model_with(base, merged, torch.float32))
    for a in adapters:
        if a["path"] == TE_LORA and te_deltas is None:
            components["text_encoder"] = with_te(base_pipe, deltas[TE_LORA + ":text_encoder"], a["weight"])
    pipe = up.pf.FluxPipeline(**components)
    pipe.set_progress_bar_config(disable=True)
    u8, first, final, _ = modes.call_upstream("flux", pipe, c, {}, shared)
    return (u8[0], first, final), merged


def level_distance(a, b):
    d = np.abs(a.astype(np.int32) - b.astype(np.int32))
    return int(d.max()), round(float(d.mean()), 3)


def run(shared, up, lr, lora_up, root, only_case):
    os.makedirs(root, exist_ok=True)
    pipe_dir = os.path.join(root, "pipe")
    if not os.path.isfile(os.path.join(pipe_dir, "model_index.json")):
        pipe_dir = shared.build_flux(up, root)
    base_pipe = shared.load_flux(up, pipe_dir)
    base = base_pipe.transformer
    weights = dict(base.named_modules())
    deltas, loras = {}, {}
    for file_name, spec in LORAS.items():
        path = os.path.join(root, file_name)
        deltas[file_name], cfg = converted_deltas(lr, lora_up, shared, base, path,
                                                  write_lora(lr, base, path, spec))
        ratio = max(float(d.norm() / weights[n].weight.double().norm()) for n, d in deltas[file_name].items())
        loras[file_name] = dict(layout=spec["format"], rank=spec["rank"], alpha=spec["alpha"], seed=spec["seed"],
                                peft_r=cfg["r"], peft_lora_alpha=cfg["lora_alpha"],
                                modules=sorted(deltas[file_name]), max_delta_norm_over_weight_norm=round(ratio, 4))
        print(file_name, json.dumps({k: v for k, v in loras[file_name].items() if k != "modules"}), flush=True)
    te_path = os.path.join(root, TE_LORA)
    denoiser_part, encoder_part = write_te_lora(base_pipe, te_path)
    te_converted(lr, lora_up, te_path, denoiser_part, encoder_part)
    deltas[TE_LORA], deltas[TE_LORA + ":text_encoder"] = denoiser_part, encoder_part
    loras[TE_LORA] = dict(layout="peft", rank=TE_RANK, alpha=None, seed=TE_SEED, modules=sorted(denoiser_part),
                          text_encoder_modules=sorted(encoder_part))
    results, cases = {}, []
    for c in CASES:
        if only_case and c["name"] != only_case:
            continue
        (u8, first, final), merged = call_with(lr, up, shared, base_pipe, deltas, c, c["adapters"])
        stats = {"modules_merged": len(merged),
                 "max_delta_norm_over_weight_norm": round(max(
                     float((merged[n] - weights[n].weight.double()).norm() / weights[n].weight.double().norm())
                     for n in merged), 4)}
        # Without any adapter, and for a stack without its last one: each
        # adapter must show, or the daemon could skip it and still match.
        fewer = {"no_lora": ([], None)}
        if len(c["adapters"]) > 1:
            fewer["without_last_adapter"] = (c["adapters"][:-1], None)
        if any(a["path"] == TE_LORA for a in c["adapters"]):  # the encoder's part must show too
            fewer["without_text_encoder_part"] = (c["adapters"], {})
        for label, (adapters, te) in fewer.items():
            worst, mean = level_distance(u8, call_with(lr, up, shared, base_pipe, deltas, c, adapters, te)[0][0])
            assert worst >= MIN_MAX_LEVELS and mean >= MIN_MEAN_LEVELS, \
                f"{c['name']}: {worst} levels at most, {mean} on average from the image {label}"
            stats.update({f"max_levels_vs_{label}": worst, f"mean_levels_vs_{label}": mean})
        results[c["name"]] = {"image_u8": u8, "initial_latents": first, "final_latents": final}
        cases.append(dict(c, image_keys=[f"{c['name']}.image_u8"], stats=stats))
        print(c["name"], json.dumps(stats), flush=True)
    shared.save_ref(os.path.join(root, "lora_ref.safetensors"), results,
                    {"generator": "e2e_lora_refgen.py", "diffusers_version": up.version})
    shared.write_json(os.path.join(root, "lora_cases.json"),
                      {"family": "flux", "pipeline_class": type(base_pipe).__name__, "pipeline_folder": "pipe",
                       "diffusers_version": up.version, "torch": torch.__version__, "loras": loras,
                       "cases": cases})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared-refgen", default=os.path.join(modes.REPO_ROOT, "..", "shared", "refgen"),
                    help="the folder of e2e_pipe_refgen.py and lora_refgen.py (default: ../shared/refgen beside "
                         "the repository)")
    ap.add_argument("--transformers-src", required=True)
    ap.add_argument("--diffusers-src", required=True)
    ap.add_argument("--out-root", required=True, help="folder of flux-pipe/, shared with the other generators")
    ap.add_argument("--case", help="one case only (the files then hold only it)")
    args = ap.parse_args()
    shared = modes.import_shared(args.shared_refgen)
    up = shared.import_upstream(args.transformers_src, args.diffusers_src)
    lr, lora_up = import_lora_upstream(args.shared_refgen)
    run(shared, up, lr, lora_up, os.path.join(args.out_root, "flux-pipe"), args.case)


if __name__ == "__main__":
    main()
