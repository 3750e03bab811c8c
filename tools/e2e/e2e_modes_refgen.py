#!/usr/bin/env python3
"""Upstream references for Generate's image modes: img2img, inpainting,
batches (num_images_per_prompt, a list of generators) and FLUX's true CFG,
run through diffusers' own pipeline __call__s on the tiny pipeline folders
of the shared e2e_pipe_refgen.py.

That shared script (--shared-refgen; default ../shared/refgen beside the
repository) does the upstream import (diffusers and transformers from
source trees, on torch 1.13, a PIL stand-in) and builds OUT/<family>-pipe/
pipe/ (ZImagePipeline, FluxPipeline folders). This script calls its
functions for both, then builds the mode pipelines (ZImageImg2ImgPipeline,
ZImageInpaintPipeline, FluxImg2ImgPipeline, FluxInpaintPipeline) from the
same components and runs the CASES below, float32 on the CPU, 1 thread, as
the shared script runs its txt2img cases (the daemon compares with FP8 off).
An existing pipe/ is reused, so the shared script's cases.json and
ref.safetensors stay valid beside these; it is built only when missing.

Per family it writes, next to what the shared script wrote (never over it):
  init_80x48.png, init_64x64.png  8-bit RGB init images (modes_inputs.py)
  mask_80x48.png                  8-bit grey inpainting mask
  modes_cases.json                {"family", "pipeline_class", "pipeline_folder": "pipe", "cases": [...]}
  modes_ref.safetensors           the images and intermediates, keys below
Each case says what a client sends: mode (txt2img, img2img, inpaint),
prompt, negative_prompt ("" = none sent), width, height, steps, seed (0 with
seeds) or seeds, guidance_scale (upstream's number: Z-Image's CFG
pos + g(pos - neg) when g > 0; FLUX's distilled guidance), true_cfg_scale
(0: none), strength (0: not passed, the pipeline's default, which
effective_strength records), num_images_per_prompt (0: 1; with seeds, their
count, as the wire wants both), image and mask (file names in the family
folder, "" for none); and image_keys, its images' keys in
modes_ref.safetensors in batch order, and stats (distances printed as a
sanity check). Upstream gets the PNGs' values exactly: tensors uint8 / 255
in float32, image [1, 3, H, W], mask [1, 1, H, W].

modes_ref.safetensors keys, per case: image_u8 [H, W, 3] uint8
(output_type="pil", upstream's (x * 255).round()) for one image, and
image_u8.<k> for image k of a batch; initial_latents and final_latents
[N, 16, h, w] (unpacked, pipeline space); sigmas (the scheduler's, before
truncation by strength). img2img and inpaint add image_latents
[1, 16, h, w] (the VAE's latent_dist.sample, shifted and scaled) and noise
[N, 16, h, w]; inpaint adds mask_latents [1, 1, h, w] (binarized, nearest).
Those are recomputed here from the documented draw order and checked:
image_latents and noise through the transformer's first input
(check_initial_latents), mask_latents through the last blend
(check_inpaint_keeps).

Usage (Debian python3-torch 1.13, no pip; about 10 s on 2 cores), after or
without the shared script's own run into the same OUT:
  /usr/bin/python3 tools/e2e/e2e_modes_refgen.py --transformers-src TRANSFORMERS_V4_57_SRC \\
      --diffusers-src DIFFUSERS_SRC --out-root OUT [--shared-refgen DIR] [--only zimage|flux] [--case NAME]
"""
import argparse
import importlib
import inspect
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import modes_inputs  # noqa: E402

Z_PROMPT = "a red fox in the snow, morning light"
F_PROMPT = "a lighthouse at dusk, oil painting"
NEGATIVE = "blurry, low quality"


def case(name, mode, prompt, width=80, height=48, steps=3, seed=11, seeds=None, guidance_scale=0.0,
         negative_prompt="", true_cfg_scale=0.0, strength=0.0, num_images_per_prompt=0, sigmas=None,
         max_sequence_length=0):
    """One upstream __call__, as a client asks for it (see the docstring).
    `sigmas` (upstream's, before the scheduler's shift) sets the steps."""
    image = f"init_{width}x{height}.png" if mode != "txt2img" else ""
    return dict(name=name, mode=mode, prompt=prompt, negative_prompt=negative_prompt, width=width, height=height,
                steps=len(sigmas) if sigmas else steps, seed=0 if seeds else seed, seeds=list(seeds or []),
                guidance_scale=guidance_scale, true_cfg_scale=true_cfg_scale, strength=strength,
                num_images_per_prompt=len(seeds) if seeds else num_images_per_prompt,  # the wire wants both
                image=image, mask=f"mask_{width}x{height}.png" if mode == "inpaint" else "",
                sigmas=list(sigmas or []), max_sequence_length=max_sequence_length)


# Steps are chosen so that strength truncates the schedule: upstream starts at
# t_start = int(steps - min(steps * strength, steps)) in doubles; 0.5 of 3
# steps starts at 1. 0.56 of 25 starts at 10, not 11: 25 * 0.56 is
# 14.000000000000002 (float32 arithmetic would give 11).
CASES = {
    "zimage": [
        case("zimage-i2i-s05", "img2img", Z_PROMPT, steps=3, strength=0.5),
        case("zimage-i2i-s09-cfg", "img2img", Z_PROMPT, steps=10, strength=0.9, guidance_scale=3.0,
             negative_prompt="dark, noisy"),
        case("zimage-i2i-s056", "img2img", Z_PROMPT, steps=25, strength=0.56),
        case("zimage-inpaint", "inpaint", Z_PROMPT, steps=4),  # strength: ZImageInpaintPipeline's 1.0
        case("zimage-inpaint-s08", "inpaint", Z_PROMPT, steps=5, strength=0.8),
        case("zimage-batch2", "txt2img", Z_PROMPT, num_images_per_prompt=2),
        case("zimage-seeds", "txt2img", Z_PROMPT, seeds=[11, 12]),
        case("zimage-i2i-batch2", "img2img", Z_PROMPT, width=64, height=64, steps=4, seed=13,
             num_images_per_prompt=2),  # strength: ZImageImg2ImgPipeline's 0.6
        case("zimage-i2i-seeds", "img2img", Z_PROMPT, width=64, height=64, steps=4, seeds=[13, 14], strength=0.7),
        case("zimage-sigmas", "txt2img", Z_PROMPT, sigmas=[1.0, 0.7, 0.3]),
        case("zimage-i2i-sigmas", "img2img", Z_PROMPT, sigmas=[0.95, 0.8, 0.5, 0.2], strength=0.5),
        case("zimage-maxseq", "txt2img", Z_PROMPT, max_sequence_length=16),
    ],
    "flux": [
        case("flux-truecfg", "txt2img", F_PROMPT, guidance_scale=4.0, negative_prompt=NEGATIVE, true_cfg_scale=3.0),
        case("flux-i2i-s05", "img2img", F_PROMPT, steps=3, strength=0.5, guidance_scale=4.0),
        case("flux-i2i-s09", "img2img", F_PROMPT, steps=10, strength=0.9, guidance_scale=4.0),
        case("flux-inpaint", "inpaint", F_PROMPT, steps=4, guidance_scale=4.0),  # FluxInpaintPipeline's 0.6
        case("flux-inpaint-s08", "inpaint", F_PROMPT, steps=5, strength=0.8, guidance_scale=4.0),
        case("flux-batch2", "txt2img", F_PROMPT, guidance_scale=4.0, num_images_per_prompt=2),
        case("flux-seeds", "txt2img", F_PROMPT, guidance_scale=4.0, seeds=[11, 12]),
        case("flux-i2i-batch2", "img2img", F_PROMPT, width=64, height=64, steps=4, seed=13, guidance_scale=4.0,
             num_images_per_prompt=2),  # strength: FluxImg2ImgPipeline's 0.6
        case("flux-i2i-seeds", "img2img", F_PROMPT, width=64, height=64, steps=4, seeds=[13, 14], strength=0.7,
             guidance_scale=4.0),
        case("flux-sigmas", "txt2img", F_PROMPT, guidance_scale=4.0, sigmas=[1.0, 0.6, 0.2]),
        case("flux-maxseq", "txt2img", F_PROMPT, guidance_scale=4.0, max_sequence_length=64),
    ],
}
PIPELINE_MODULES = {
    ("zimage", "img2img"): ("z_image.pipeline_z_image_img2img", "ZImageImg2ImgPipeline"),
    ("zimage", "inpaint"): ("z_image.pipeline_z_image_inpaint", "ZImageInpaintPipeline"),
    ("flux", "img2img"): ("flux.pipeline_flux_img2img", "FluxImg2ImgPipeline"),
    ("flux", "inpaint"): ("flux.pipeline_flux_inpaint", "FluxInpaintPipeline"),
}


def import_shared(folder):
    sys.path.insert(0, os.path.abspath(folder))
    return importlib.import_module("e2e_pipe_refgen")


def family_refgen_main(doc, families, import_upstream, run_family, diffusers_commit, transformers_commit):
    """The command line of a script that builds its own families' folders
    and cases (e2e_qwen_refgen.py, e2e_wan_refgen.py): parses it, imports
    upstream with `import_upstream(shared, transformers_src, diffusers_src)`
    and runs `run_family(shared, up, family, OUT/<family>-pipe, case, args)`
    for each of `families` (or the one --only names)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared-refgen", default=os.path.join(REPO_ROOT, "..", "shared", "refgen"),
                    help="the folder of e2e_pipe_refgen.py (default: ../shared/refgen beside the repository)")
    ap.add_argument("--transformers-src", required=True)
    ap.add_argument("--transformers-commit", default=transformers_commit)
    ap.add_argument("--diffusers-src", required=True)
    ap.add_argument("--diffusers-commit", default=diffusers_commit)
    ap.add_argument("--out-root", required=True, help="folder of <family>-pipe/")
    ap.add_argument("--only", choices=tuple(families))
    ap.add_argument("--case", help="one case only (its family's files then hold only it)")
    args = ap.parse_args()
    shared = import_shared(args.shared_refgen)
    up = import_upstream(shared, args.transformers_src, args.diffusers_src)
    for family in families:
        if not args.only or family == args.only:
            run_family(shared, up, family, os.path.join(args.out_root, f"{family}-pipe"), args.case, args)


def mode_pipelines(family, txt2img):
    """{mode: pipeline} sharing txt2img's components (one scheduler object:
    each __call__ sets its timesteps afresh)."""
    pipes = {"txt2img": txt2img}
    for (fam, mode), (module, cls) in PIPELINE_MODULES.items():
        if fam == family:
            pipe = getattr(importlib.import_module("diffusers.pipelines." + module), cls)(**txt2img.components)
            pipe.set_progress_bar_config(disable=True)
            pipes[mode] = pipe
    return pipes


def image_count(c):
    return max(c["num_images_per_prompt"], len(c["seeds"]), 1)


def generators(c):
    """What upstream takes: one generator, or a list (one per image)."""
    if c["seeds"]:
        return [torch.Generator("cpu").manual_seed(s) for s in c["seeds"]]
    return torch.Generator("cpu").manual_seed(c["seed"])


def pixels_as_upstream_gets_them(u8):
    """uint8 [H, W, 3] or [H, W] -> float32 [1, C, H, W] in [0, 1]: a
    division by 255, what the daemon does with the PNG's samples."""
    t = torch.from_numpy(u8.copy()).float() / 255.0
    return (t.permute(2, 0, 1) if t.dim() == 3 else t[None])[None].contiguous()


def effective_strength(pipe, c):
    if c["mode"] == "txt2img":
        return 0.0
    return c["strength"] or inspect.signature(type(pipe).__call__).parameters["strength"].default


def call_upstream(family, pipe, c, inputs, shared):
    """Runs one case; returns (uint8 images, initial latents, final latents,
    transformer calls), latents unpacked [N, 16, h, w]."""
    kwargs = dict(prompt=c["prompt"], height=c["height"], width=c["width"], num_inference_steps=c["steps"],
                  guidance_scale=c["guidance_scale"], generator=generators(c), num_images_per_prompt=image_count(c),
                  output_type="pil", return_dict=False)
    if c["negative_prompt"]:
        kwargs["negative_prompt"] = c["negative_prompt"]
    if c["true_cfg_scale"]:
        kwargs["true_cfg_scale"] = c["true_cfg_scale"]
    if c.get("max_sequence_length"):
        kwargs["max_sequence_length"] = c["max_sequence_length"]
    elif family == "flux":
        kwargs["max_sequence_length"] = 512
    if c.get("sigmas"):
        kwargs["sigmas"] = c["sigmas"]
    if c["mode"] != "txt2img":
        kwargs["image"] = pixels_as_upstream_gets_them(inputs[c["image"]])
    if c["mode"] == "inpaint":
        kwargs["mask_image"] = pixels_as_upstream_gets_them(inputs[c["mask"]])
    if c["strength"]:
        kwargs["strength"] = c["strength"]
    steps = []

    def on_step(p, i, t, kw):
        steps.append(kw["latents"].detach().clone())
        return {}

    rec = shared.Recorder(pipe.transformer)
    with torch.no_grad():
        images = pipe(callback_on_step_end=on_step, **kwargs)[0]
    rec.remove()
    n = image_count(c)
    if family == "zimage":  # a list of [C, 1, h, w]: the positives, then the negatives under CFG
        first = torch.stack([x[:, 0] for x in rec.calls[0][0][0][:n]])
        final = steps[-1]
    else:
        first, final = (pipe._unpack_latents(packed, c["height"], c["width"], pipe.vae_scale_factor)
                        for packed in (rec.calls[0][1]["hidden_states"], steps[-1]))
    u8 = [np.asarray(im) for im in images]
    assert len(u8) == n and all(im.dtype == np.uint8 and im.shape == (c["height"], c["width"], 3) for im in u8)
    return u8, first, final, rec.calls


def t_start(steps, strength):
    """Upstream's get_timesteps, in Python floats (doubles)."""
    return int(max(steps - min(steps * strength, steps), 0))


def check_initial_latents(pipe, c, inputs, strength, first):
    """Recomputes what upstream gave the transformer first, in the draw
    order the daemon must follow, and asserts it is bit-identical; returns
    the intermediates for the reference file.

    One generator: eps for the VAE's latent_dist.sample [1, 16, h, w] of the
    one init image, then noise [N, 16, h, w] in one randn. A list: eps from
    generator 0 only (upstream encodes image[i] for i < image.shape[0] = 1),
    then noise of image k from generator k. Inpainting then draws again from
    generator 0 (the masked image's encoding; unused by both families'
    transformers), which cannot change the output."""
    h, w = 2 * (c["height"] // 16), 2 * (c["width"] // 16)
    n, gens = image_count(c), generators(c)
    first_gen = gens[0] if isinstance(gens, list) else gens
    out = {}
    if c["mode"] != "txt2img":
        image = 2.0 * pixels_as_upstream_gets_them(inputs[c["image"]]) - 1.0
        with torch.no_grad():
            dist = pipe.vae.encode(image).latent_dist
        eps = torch.randn(dist.mean.shape, generator=first_gen, dtype=torch.float32)
        cfg = pipe.vae.config
        out["image_latents"] = (dist.mean + dist.std * eps - cfg.shift_factor) * cfg.scaling_factor
    if isinstance(gens, list):
        noise = torch.cat([torch.randn((1, 16, h, w), generator=g, dtype=torch.float32) for g in gens])
    else:
        noise = torch.randn((n, 16, h, w), generator=gens, dtype=torch.float32)
    expected = noise
    if c["mode"] != "txt2img":
        begin = t_start(c["steps"], strength)
        assert pipe.scheduler.begin_index == begin, (pipe.scheduler.begin_index, begin)
        sigma = pipe.scheduler.sigmas[begin]
        expected = sigma * noise + (1.0 - sigma) * out["image_latents"]
        out["noise"] = noise
    assert torch.equal(first, expected), f"{c['name']}: the first transformer input is not the documented draw"
    if c["mode"] == "inpaint":
        mask = pixels_as_upstream_gets_them(inputs[c["mask"]])
        mask = torch.where(mask < 0.5, 0.0, 1.0)
        out["mask_latents"] = torch.nn.functional.interpolate(mask, size=(h, w), mode="nearest")
    return out


def check_inpaint_keeps(c, extra, final):
    """Upstream's last blend takes the clean image_latents where the mask is
    0: the final latents equal them there, bit for bit, and nowhere else
    (so mask_latents is upstream's mask)."""
    same = (final == extra["image_latents"]).all(dim=1, keepdim=True)  # [N, 1, h, w]
    assert torch.equal(same, (extra["mask_latents"] == 0).expand_as(same)), c["name"]


def vae_round_trip(pipe, image_latents):
    """The init image through the VAE and back, uint8 [H, W, 3]: with these
    random-weight VAEs it is far from the init image, so it, not the init
    image, is what an unchanged region should stay near."""
    cfg = pipe.vae.config
    with torch.no_grad():
        decoded = pipe.vae.decode(image_latents / cfg.scaling_factor + cfg.shift_factor, return_dict=False)[0]
    return (pipe.image_processor.postprocess(decoded, output_type="np")[0] * 255).round().astype(np.uint8)


def stats(c, u8, inputs, extra, final, vs_single):
    """How far each image is from the init image's VAE round trip (mean
    level difference: overall, and on kept and repainted pixels), its final
    latents from the init image's (RMS), and, for batches, each image from
    the single image of its seed (versus_single)."""
    s = {"image_u8_mean": [round(float(im.mean()), 3) for im in u8]}
    if "round_trip" in extra:
        diff = [np.abs(im.astype(np.int32) - extra["round_trip"].astype(np.int32)) for im in u8]
        s["mean_levels_to_round_trip"] = [round(float(d.mean()), 3) for d in diff]
        if c["mode"] == "inpaint":
            repaint = inputs[c["mask"]] >= 128
            s["mean_levels_to_round_trip_kept"] = [round(float(d[~repaint].mean()), 3) for d in diff]
            s["mean_levels_to_round_trip_repainted"] = [round(float(d[repaint].mean()), 3) for d in diff]
        rms = ((final - extra["image_latents"]) ** 2).mean(dim=(1, 2, 3)).sqrt()
        s["latent_rms_to_image_latents"] = [round(float(v), 4) for v in rms]
    if vs_single:
        s["max_levels_vs_single_image_of_its_seed"] = vs_single
    return s


def versus_single(family, pipe, c, inputs, shared, u8):
    """{k: largest level difference} between image k of a batch and the one
    image a call with its seed makes: image 0 (any batch) shares its draws;
    with seeds, so does image k of txt2img, but not of img2img (generator k
    draws no VAE eps there)."""
    if image_count(c) == 1:
        return {}
    seeds = c["seeds"] or [c["seed"]]
    out = {}
    for k, seed in enumerate(seeds):
        single = dict(c, seeds=[], seed=seed, num_images_per_prompt=0)
        image = call_upstream(family, pipe, single, inputs, shared)[0][0]
        out[str(k)] = int(np.abs(u8[k].astype(np.int32) - image.astype(np.int32)).max())
    return out


def write_inputs(root):
    inputs = {}
    for width, height in ((80, 48), (64, 64)):
        pixels = modes_inputs.init_image(width, height)
        inputs[modes_inputs.write_png(os.path.join(root, f"init_{width}x{height}.png"), pixels)] = pixels
    mask = modes_inputs.inpaint_mask(80, 48)
    inputs[modes_inputs.write_png(os.path.join(root, "mask_80x48.png"), mask)] = mask
    return inputs


def run_family(shared, up, family, root, only_case):
    os.makedirs(root, exist_ok=True)
    pipe_dir = os.path.join(root, "pipe")
    if not os.path.isfile(os.path.join(pipe_dir, "model_index.json")):
        pipe_dir = (shared.build_zimage if family == "zimage" else shared.build_flux)(up, root)
    txt2img = (shared.load_zimage if family == "zimage" else shared.load_flux)(up, pipe_dir)
    pipes = mode_pipelines(family, txt2img)
    inputs = write_inputs(root)
    results, cases = {}, []
    for c in CASES[family]:
        if only_case and c["name"] != only_case:
            continue
        pipe = pipes[c["mode"]]
        strength = effective_strength(pipe, c)
        u8, first, final, _ = call_upstream(family, pipe, c, inputs, shared)
        r = {"initial_latents": first, "final_latents": final, "sigmas": pipe.scheduler.sigmas.float()}
        r.update(check_initial_latents(pipe, c, inputs, strength, first))
        if c["mode"] == "inpaint":
            check_inpaint_keeps(c, r, final)
        extra = {"round_trip": vae_round_trip(pipe, r["image_latents"])} if "image_latents" in r else {}
        extra.update(r)
        keys = ["image_u8"] if len(u8) == 1 else [f"image_u8.{k}" for k in range(len(u8))]
        r.update(zip(keys, u8))
        results[c["name"]] = r
        record = dict(c, effective_strength=strength, image_keys=[f"{c['name']}.{k}" for k in keys])
        record["stats"] = stats(c, u8, inputs, extra, final, versus_single(family, pipe, c, inputs, shared, u8))
        cases.append(record)
        print(c["name"], json.dumps(record["stats"]), flush=True)
    shared.save_ref(os.path.join(root, "modes_ref.safetensors"), results,
                    {"generator": "e2e_modes_refgen.py", "diffusers_version": up.version})
    shared.write_json(os.path.join(root, "modes_cases.json"),
                      {"family": family, "pipeline_class": type(txt2img).__name__, "pipeline_folder": "pipe",
                       "diffusers_version": up.version, "torch": torch.__version__, "cases": cases})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared-refgen", default=os.path.join(REPO_ROOT, "..", "shared", "refgen"),
                    help="the folder of e2e_pipe_refgen.py (default: ../shared/refgen beside the repository)")
    ap.add_argument("--transformers-src", required=True)
    ap.add_argument("--diffusers-src", required=True)
    ap.add_argument("--out-root", required=True, help="folder of <family>-pipe/, shared with e2e_pipe_refgen.py")
    ap.add_argument("--only", choices=("zimage", "flux"))
    ap.add_argument("--case", help="one case only (its family's files then hold only it)")
    args = ap.parse_args()
    shared = import_shared(args.shared_refgen)
    up = shared.import_upstream(args.transformers_src, args.diffusers_src)
    for family in CASES:
        if args.only and family != args.only:
            continue
        run_family(shared, up, family, os.path.join(args.out_root, f"{family}-pipe"), args.case)


if __name__ == "__main__":
    main()
