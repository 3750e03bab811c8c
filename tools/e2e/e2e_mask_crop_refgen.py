#!/usr/bin/env python3
"""Upstream references for Generate's padding_mask_crop: diffusers' own
FluxInpaintPipeline and QwenImageInpaintPipeline __call__s with
padding_mask_crop, on the tiny pipeline folders the other e2e references
use (OUT/flux-pipe/pipe/, OUT/qwenimage-pipe/pipe/; each built as
e2e_pipe_refgen.py / e2e_qwen_refgen.py build it when missing, reused
when there, so those scripts' references stay valid beside these).

padding_mask_crop is the one image input upstream takes only as PIL
images (get_crop_region, the resize modes "fill" and "crop" and
apply_overlay are Pillow's), so this script runs them with the real
Pillow (Debian's python3-pil 9.4.0): it is imported before the shared
upstream import installs its stand-in, and handed to diffusers'
image_processor module (PIL, Image, ImageOps, PIL_INTERPOLATION) and to
the inpainting pipelines' modules. Everything else is the other scripts'
setup: float32 on the CPU, 1 thread.

The cases give an init image of another size than width x height and a
mask smaller than it, whose padded box must grow to the output's aspect
ratio (and, near an edge, shift back inside the image, or where the image
is too narrow, stay short of it: the fill then stretches its edges); the
mask has grey
pixels on both sides of 0.5, which the latent mask binarises and the
overlay blends partly. Per family it writes, next to the other scripts'
files (never over them):
  crop_init_112x88.png, crop_init_72x120.png   8-bit RGB init images
  crop_mask_112x88.png, crop_mask_72x120.png   8-bit grey masks
  mask_crop_cases.json     {"family", "pipeline_class", "pipeline_folder":
                           "pipe", "cases": [...]} in e2e_modes_refgen.py's
                           format, with padding_mask_crop and crops_coords
                           (upstream's get_crop_region box)
  mask_crop_ref.safetensors  <case>.image_u8 (or image_u8.<k> in a batch):
                           [H, W, 3] uint8 of the init image's size
Each image is checked to be the init image's own bytes wherever the mask
is black (apply_overlay composites the original at full opacity there).

Usage (Debian python3-torch 1.13, python3-pil 9.4.0; about a minute on 2 busy cores):
  /usr/bin/python3 tools/e2e/e2e_mask_crop_refgen.py --transformers-src TRANSFORMERS_V4_57_SRC \\
      --diffusers-src DIFFUSERS_SRC --out-root OUT [--shared-refgen DIR] [--only flux|qwenimage] [--case NAME]
"""
import argparse
import importlib
import json
import os
import sys

import numpy as np
import PIL
import PIL.Image
import PIL.ImageFilter
import PIL.ImageOps
import PIL.PngImagePlugin  # noqa: F401  (now: Image.open's lazy plugin import would find the stand-in)
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import e2e_modes_refgen as modes  # noqa: E402
import e2e_qwen_refgen as qwen  # noqa: E402
import modes_inputs  # noqa: E402

F_PROMPT = "a lighthouse at dusk, oil painting"
Q_PROMPT = "a red fox in the snow, morning light"
INPUTS = {(112, 88): (34, 22, 62, 66), (72, 120): (44, 86, 66, 112)}  # init size: the mask's white box


def crop_mask(width, height):
    """A grey mask [H, W]: black, a white box (INPUTS) not on the 8-pixel
    grid, inside it a band of grey 127 (kept after binarising, but blended
    half by the overlay) and a pixel of 128, and outside it a few grey
    pixels that widen the box (1, 60, 200)."""
    x0, y0, x1, y1 = INPUTS[(width, height)]
    mask = np.zeros((height, width), np.uint8)
    mask[y0:y1, x0:x1] = 255
    mask[y0 + 6:y0 + 12, x0 + 3:x1 - 3] = 127
    mask[y0 + 14, x0 + 5] = 128
    for dx, dy, grey in ((-6, 2, 1), (3, -4, 60), (x1 - x0 + 2, y1 - y0 - 3, 200)):
        x, y = x0 + dx, y0 + dy
        if 0 <= x < width and 0 <= y < height:
            mask[y, x] = grey
    return mask


def crop_case(name, prompt, size, width, height, pad, steps=4, seed=11, seeds=None, guidance_scale=None,
              strength=0.0, num_images_per_prompt=0):
    c = modes.case(name, "inpaint", prompt, width=width, height=height, steps=steps, seed=seed, seeds=seeds,
                   guidance_scale=guidance_scale, strength=strength, num_images_per_prompt=num_images_per_prompt)
    c.update(image=f"crop_init_{size[0]}x{size[1]}.png", mask=f"crop_mask_{size[0]}x{size[1]}.png",
             padding_mask_crop=pad)
    return c


CASES = {
    "flux": [
        # A tall box grown to 80:48 (FluxInpaintPipeline's strength 0.6).
        crop_case("flux-inpaint-crop", F_PROMPT, (112, 88), 80, 48, 8, guidance_scale=4.0),
        # Near the bottom-right corner: the box grows to 1:1 and shifts left.
        crop_case("flux-inpaint-crop-edge", F_PROMPT, (72, 120), 64, 64, 4, strength=0.8, guidance_scale=4.0),
        # A padding wider than the image can take: the box cannot reach 80:48, so the fill's
        # edge strips (13 columns a side, bicubic) carry the image's edges.
        crop_case("flux-inpaint-crop-fill", F_PROMPT, (72, 120), 80, 48, 30, guidance_scale=4.0),
        # No padding, two images of their own seeds.
        crop_case("flux-inpaint-crop-seeds", F_PROMPT, (112, 88), 64, 48, 0, seed=0, seeds=[13, 14],
                  guidance_scale=4.0),
    ],
    "qwenimage": [
        crop_case("qwenimage-inpaint-crop", Q_PROMPT, (112, 88), 80, 48, 8),  # strength: the default 0.6
        crop_case("qwenimage-inpaint-crop-edge", Q_PROMPT, (72, 120), 64, 64, 4, steps=3, strength=1.0),
        crop_case("qwenimage-inpaint-crop-fill", Q_PROMPT, (72, 120), 80, 48, 30, strength=0.8),
    ],
}
PIPELINE_CLASS = {"flux": "FluxPipeline", "qwenimage": "QwenImagePipeline"}
INPAINT_MODULE = {"flux": "diffusers.pipelines.flux.pipeline_flux_inpaint",
                  "qwenimage": "diffusers.pipelines.qwenimage.pipeline_qwenimage_inpaint"}


def use_real_pillow():
    """Hands the real Pillow to the modules padding_mask_crop goes
    through, in place of the shared import's stand-in."""
    ip = importlib.import_module("diffusers.image_processor")
    ip.PIL, ip.Image, ip.ImageOps, ip.ImageFilter = PIL, PIL.Image, PIL.ImageOps, PIL.ImageFilter
    ip.PIL_INTERPOLATION = {"linear": PIL.Image.Resampling.BILINEAR, "bilinear": PIL.Image.Resampling.BILINEAR,
                            "bicubic": PIL.Image.Resampling.BICUBIC, "lanczos": PIL.Image.Resampling.LANCZOS,
                            "nearest": PIL.Image.Resampling.NEAREST}
    for name in INPAINT_MODULE.values():
        importlib.import_module(name).PIL = PIL
    return "diffusers.image_processor and the inpainting pipelines: the real Pillow " + PIL.__version__


def inpaint_pipeline(shared, up, family, root):
    pipe_dir = os.path.join(root, "pipe")
    if family == "flux":
        if not os.path.isfile(os.path.join(pipe_dir, "model_index.json")):
            pipe_dir = shared.build_flux(up, root)
        txt2img = shared.load_flux(up, pipe_dir)
        pipe = importlib.import_module(INPAINT_MODULE[family]).FluxInpaintPipeline(**txt2img.components)
        pipe.set_progress_bar_config(disable=True)
        return pipe
    if not os.path.isfile(os.path.join(pipe_dir, "model_index.json")):
        pipe_dir = qwen.build_folder(shared, up, family, root)
    return qwen.load_pipelines(shared, up, family, pipe_dir)["inpaint"]


def write_inputs(root):
    inputs = {}
    for width, height in INPUTS:
        image = modes_inputs.init_image(width, height)
        mask = crop_mask(width, height)
        inputs[modes_inputs.write_png(os.path.join(root, f"crop_init_{width}x{height}.png"), image)] = image
        inputs[modes_inputs.write_png(os.path.join(root, f"crop_mask_{width}x{height}.png"), mask)] = mask
    return inputs


def run_case(pipe, c, root, inputs):
    """(reference tensors, cases-file record) of one case."""
    image = PIL.Image.open(os.path.join(root, c["image"]))
    mask = PIL.Image.open(os.path.join(root, c["mask"]))
    assert (image.mode, mask.mode) == ("RGB", "L"), (image.mode, mask.mode)
    kwargs = dict(prompt=c["prompt"], image=image, mask_image=mask, padding_mask_crop=c["padding_mask_crop"],
                  height=c["height"], width=c["width"], num_inference_steps=c["steps"],
                  generator=modes.generators(c), num_images_per_prompt=modes.image_count(c), output_type="pil",
                  return_dict=False)
    if c["guidance_scale"] is not None:
        kwargs["guidance_scale"] = c["guidance_scale"]
    if c["strength"]:
        kwargs["strength"] = c["strength"]
    with torch.no_grad():
        out = pipe(**kwargs)[0]
    u8 = [np.asarray(im) for im in out]
    original, black = inputs[c["image"]], inputs[c["mask"]] == 0
    assert len(u8) == modes.image_count(c)
    for im in u8:
        assert im.dtype == np.uint8 and im.shape == original.shape, im.shape
        assert np.array_equal(im[black], original[black]), f"{c['name']}: the overlay changed a kept pixel"
    box = pipe.mask_processor.get_crop_region(mask, c["width"], c["height"], pad=c["padding_mask_crop"])
    keys = ["image_u8"] if len(u8) == 1 else [f"image_u8.{k}" for k in range(len(u8))]
    inside = ~black
    stats = {"image_u8_mean": [round(float(im.mean()), 3) for im in u8],
             "mean_levels_to_init_under_mask": [round(float(np.abs(im.astype(np.int32) - original)[inside].mean()), 3)
                                                for im in u8]}
    record = dict(c, effective_strength=modes.effective_strength(pipe, c), crops_coords=list(box),
                  image_keys=[f"{c['name']}.{k}" for k in keys], stats=stats)
    return dict(zip(keys, u8)), record


def run_family(shared, up, family, root, only_case, argv):
    os.makedirs(root, exist_ok=True)
    pipe = inpaint_pipeline(shared, up, family, root)
    inputs = write_inputs(root)
    results, cases = {}, []
    for c in CASES[family]:
        if only_case and c["name"] != only_case:
            continue
        results[c["name"]], record = run_case(pipe, c, root, inputs)
        cases.append(record)
        print(c["name"], json.dumps({"crops_coords": record["crops_coords"], **record["stats"]}), flush=True)
    meta = {"generator": "e2e_mask_crop_refgen.py", "diffusers_commit": argv.diffusers_commit,
            "transformers_commit": argv.transformers_commit, "pillow": PIL.__version__}
    shared.save_ref(os.path.join(root, "mask_crop_ref.safetensors"), results, meta)
    shared.write_json(os.path.join(root, "mask_crop_cases.json"),
                      {"family": family, "pipeline_class": PIPELINE_CLASS[family], "pipeline_folder": "pipe",
                       "diffusers_version": up.version, "torch": torch.__version__, "pillow": PIL.__version__,
                       "cases": cases})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared-refgen", default=os.path.join(REPO_ROOT, "..", "shared", "refgen"),
                    help="the folder of e2e_pipe_refgen.py (default: ../shared/refgen beside the repository)")
    ap.add_argument("--transformers-src", required=True)
    ap.add_argument("--transformers-commit", default=qwen.TRANSFORMERS_COMMIT)
    ap.add_argument("--diffusers-src", required=True)
    ap.add_argument("--diffusers-commit", default=qwen.DIFFUSERS_COMMIT)
    ap.add_argument("--out-root", required=True, help="folder of <family>-pipe/, shared with the other e2e scripts")
    ap.add_argument("--only", choices=tuple(CASES))
    ap.add_argument("--case", help="one case only (its family's files then hold only it)")
    args = ap.parse_args()
    if PIL.__version__ != "9.4.0":
        sys.exit(f"Pillow {PIL.__version__}: these references are Pillow 9.4.0's, the version the daemon's port "
                 "was checked against")
    shared = modes.import_shared(args.shared_refgen)
    up = qwen.import_upstream(shared, args.transformers_src, args.diffusers_src)
    importlib.import_module(INPAINT_MODULE["flux"])
    importlib.import_module(INPAINT_MODULE["qwenimage"])
    shared.hc.note(use_real_pillow())
    for family in CASES:
        if not args.only or family == args.only:
            run_family(shared, up, family, os.path.join(args.out_root, f"{family}-pipe"), args.case, args)


if __name__ == "__main__":
    main()
