#!/usr/bin/env python3
"""Writes mask_crop_cases.inc beside it: what upstream diffusers'
VaeImageProcessor gives, with Pillow 9.4, for the steps of
padding_mask_crop that core/pipeline/mask_crop.h ports: get_crop_region's
boxes (as numbers), resize in "fill" and "crop" modes, apply_overlay, and
the preprocess of an image and a mask with crops_coords (as FNV-1a 64-bit
hashes of the bytes, so CI needs neither diffusers nor Pillow).

The processors are FluxInpaintPipeline's and QwenImageInpaintPipeline's
(both the same): image_processor = VaeImageProcessor(vae_scale_factor=16,
vae_latent_channels=16); mask_processor adds do_normalize=False,
do_binarize=True, do_convert_grayscale=True. Images are
tests/testing/pil_pattern.h's patterns (tests/unit/image/pil_reference.py's
pattern()); masks are black with rectangles of a colour (r, g, b), grey r
for an "L" mask: see mask() below and mask_of() in mask_crop_test.cc.

Usage (Debian's python3-torch 1.13 and python3-pil 9.4.0; the upstream
import of tools/e2e, from the shared refgen helpers):
  /usr/bin/python3 tests/unit/pipeline/mask_crop_reference.py --diffusers-src DIFFUSERS_SRC \\
      [--shared-refgen ../shared/refgen]
"""
import argparse
import importlib
import os
import sys

import numpy as np
import PIL
import PIL.Image
import PIL.ImageOps  # noqa: F401  (before the upstream import, which stubs only what is missing)
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "unit", "image"))
import pil_reference as pr  # noqa: E402  (pattern, image, fnv1a, spec)


def mask(mode, width, height, rects):
    """A black `mode` ("L" or "RGB") image with rectangles (x0, y0, x1, y1, (r, g, b)) painted in order."""
    a = np.zeros((height, width, 3), np.uint8)
    for x0, y0, x1, y1, rgb in rects:
        a[y0:y1, x0:x1] = rgb
    return PIL.Image.fromarray(a[:, :, 0] if mode == "L" else a, mode)


def mask_spec(mode, width, height, rects):
    body = ", ".join(f"{{{x0}, {y0}, {x1}, {y1}, {{{r}, {g}, {b}}}}}" for x0, y0, x1, y1, (r, g, b) in rects)
    return f'{{"{mode}", {width}, {height}, {len(rects)}, {{{body}}}}}'


WHITE, GREY = (255, 255, 255), (128, 128, 128)
MASKS = {  # name: (mode, width, height, rects)
    "tall": ("L", 100, 80, [(30, 20, 58, 70, WHITE)]),
    "corner": ("L", 100, 80, [(85, 10, 99, 30, WHITE), (90, 60, 92, 62, (1, 1, 1))]),
    "origin": ("L", 100, 80, [(0, 0, 5, 5, GREY)]),
    "big": ("L", 60, 40, [(10, 5, 50, 35, WHITE)]),
    # (0, 0, 3) is grey 0 after convert("L"), (0, 0, 9) grey 1: only the second counts.
    "rgb": ("RGB", 90, 70, [(10, 10, 12, 12, (0, 0, 3)), (40, 30, 41, 31, (0, 0, 9)), (60, 50, 70, 60, (200, 30, 90))]),
    "pixel": ("L", 64, 64, [(20, 20, 21, 21, WHITE)]),
    "odd": ("L", 120, 90, [(17, 31, 50, 48, WHITE), (30, 35, 40, 40, (127, 127, 127))]),
    "ramp": ("L", 112, 88, [(30, 20, 58, 70, WHITE), (40, 30, 48, 60, (127, 127, 127)), (50, 40, 52, 44, GREY),
                            (20, 75, 28, 80, (60, 60, 60))]),
}
REGIONS = [  # (mask, width, height, pad)
    ("tall", 80, 48, 6), ("tall", 48, 80, 6), ("tall", 64, 64, 0), ("corner", 64, 64, 10), ("origin", 80, 48, 3),
    ("big", 16, 64, 20), ("big", 64, 16, 20), ("rgb", 80, 48, 0), ("rgb", 80, 48, 4), ("pixel", 64, 64, 0),
    ("odd", 80, 48, 0), ("odd", 80, 48, 5), ("odd", 40, 30, 0), ("ramp", 80, 48, 8), ("ramp", 64, 96, 2),
]
RESIZES = [  # (input pattern, width, height); each in "fill" and "crop" modes
    (("RGB", 103, 62, "ramp", 1), 80, 48), (("RGB", 40, 62, "ramp", 2), 80, 48), (("RGB", 62, 40, "noise", 3), 48, 80),
    (("L", 50, 30, "ramp", 4), 80, 48), (("RGB", 80, 48, "noise", 5), 80, 48), (("RGB", 30, 50, "noise", 6), 80, 48),
    (("RGB", 81, 48, "ramp", 7), 80, 48), (("RGB", 80, 49, "ramp", 8), 80, 48), (("L", 17, 90, "ramp", 9), 64, 64),
]
OVERLAYS = [  # (mask, init image pattern, generated image pattern, box)
    ("ramp", ("RGB", 112, 88, "ramp", 11), ("RGB", 80, 48, "noise", 12), "region"),
    ("odd", ("L", 120, 90, "noise", 13), ("RGB", 80, 48, "ramp", 14), "region"),
    ("rgb", ("RGB", 90, 70, "noise", 15), ("RGB", 64, 64, "ramp", 16), "region"),
    ("tall", ("RGB", 100, 80, "noise", 17), ("RGB", 48, 80, "noise", 18), (3, 4, 99, 80)),
]
STARTS = [  # (mask, init image pattern, width, height, pad)
    ("ramp", ("RGB", 112, 88, "ramp", 21), 80, 48, 8), ("odd", ("L", 120, 90, "noise", 22), 64, 64, 5),
    ("rgb", ("RGB", 90, 70, "ramp", 23), 80, 48, 4), ("tall", ("RGB", 100, 80, "noise", 24), 48, 80, 0),
]


def import_processor(shared_refgen, diffusers_src):
    sys.path.insert(0, os.path.abspath(shared_refgen))
    hc = importlib.import_module("hf_compat")
    hc.import_diffusers(os.path.abspath(diffusers_src), [], bare=("models.autoencoders", "pipelines"))
    ip = importlib.import_module("diffusers.image_processor")
    assert ip.PIL is PIL, "diffusers.image_processor must see the real Pillow"
    return ip.VaeImageProcessor


def digest(im):
    a = np.asarray(im)
    return f'{{"{im.mode}", {im.width}, {im.height}, 0x{pr.fnv1a(a.tobytes()):016x}ull}}'


def tensor_digest(t, binary):
    """A preprocess output [1, C, H, W] as the bytes it came from: the mask's 0/1 times 255, the image's
    [-1, 1] back to round((x + 1) / 2 * 255)."""
    t = t[0].permute(1, 2, 0)
    u8 = (t * 255 if binary else (t + 1) / 2 * 255).round().clamp(0, 255).to(torch.uint8).numpy()
    u8 = u8[:, :, 0] if u8.shape[2] == 1 else u8
    return f'{{"{"L" if u8.ndim == 2 else "RGB"}", {u8.shape[1]}, {u8.shape[0]}, 0x{pr.fnv1a(u8.tobytes()):016x}ull}}'


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--diffusers-src", required=True)
    ap.add_argument("--shared-refgen", default=os.path.join(REPO_ROOT, "..", "shared", "refgen"))
    args = ap.parse_args()
    if PIL.__version__ != "9.4.0":
        sys.exit(f"Pillow {PIL.__version__}: upstream's references used 9.4.0")
    processor = import_processor(args.shared_refgen, args.diffusers_src)
    image_processor = processor(vae_scale_factor=16, vae_latent_channels=16)
    mask_processor = processor(vae_scale_factor=16, vae_latent_channels=16, do_normalize=False, do_binarize=True,
                               do_convert_grayscale=True)
    masks = {name: mask(*m) for name, m in MASKS.items()}
    lines = ["// Generated by tests/unit/pipeline/mask_crop_reference.py (upstream diffusers' VaeImageProcessor,",
             "// Pillow 9.4.0); do not edit. Masks: {mode, width, height, rectangles, {x0, y0, x1, y1, {r, g, b}}...}.",
             "// {mask, width, height, pad, get_crop_region's (x1, y1, x2, y2)}",
             "const MaskCropRegionCase kMaskCropRegionCases[] = {"]
    for name, width, height, pad in REGIONS:
        box = processor.get_crop_region(masks[name], width, height, pad=pad)
        lines.append(f"    {{{mask_spec(*MASKS[name])}, {width}, {height}, {pad}, {{{', '.join(map(str, box))}}}}},")
    lines += ["};", "// {input, width, height, resize(mode \"fill\"), resize(mode \"crop\")}",
              "const MaskCropResizeCase kMaskCropResizeCases[] = {"]
    for inp, width, height in RESIZES:
        im = pr.image(*inp)
        fill = image_processor.resize(im, height, width, resize_mode="fill")
        crop = image_processor.resize(im, height, width, resize_mode="crop")
        lines.append(f"    {{{pr.spec(*inp)}, {width}, {height}, {digest(fill)}, {digest(crop)}}},")
    lines += ["};", "// {mask, init image, generated image, box, apply_overlay(mask, init, generated, box)}",
              "const MaskCropOverlayCase kMaskCropOverlayCases[] = {"]
    for name, init, generated, box in OVERLAYS:
        im = pr.image(*generated)
        if box == "region":
            box = processor.get_crop_region(masks[name], im.width, im.height, pad=4)
        out = image_processor.apply_overlay(masks[name], pr.image(*init), im, box)
        lines.append(f"    {{{mask_spec(*MASKS[name])}, {pr.spec(*init)}, {pr.spec(*generated)}, "
                     f"{{{', '.join(map(str, box))}}}, {digest(out)}}},")
    lines += ["};", "// {mask, init image, width, height, pad, the image's and the mask's preprocess with",
              "// crops_coords and resize_mode \"fill\", as bytes (the mask binarised: 0 or 255)}",
              "const MaskCropStartCase kMaskCropStartCases[] = {"]
    for name, init, width, height, pad in STARTS:
        box = processor.get_crop_region(masks[name], width, height, pad=pad)
        image = image_processor.preprocess(pr.image(*init), height=height, width=width, crops_coords=box,
                                           resize_mode="fill")
        m = mask_processor.preprocess(masks[name], height=height, width=width, crops_coords=box, resize_mode="fill")
        lines.append(f"    {{{mask_spec(*MASKS[name])}, {pr.spec(*init)}, {width}, {height}, {pad}, "
                     f"{tensor_digest(image, False)}, {tensor_digest(m, True)}}},")
    lines.append("};")
    with open(os.path.join(HERE, "mask_crop_cases.inc"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
