"""The synthetic init image and inpainting mask of e2e_modes_refgen.py's
img2img and inpainting cases, as uint8 numpy arrays, deterministic (no
random numbers), and their PNG files.

The mask is built to catch the ways a port can misread it (see
inpaint_mask); the init image only needs structure a VAE turns into
varied latents.
"""
import os

import numpy as np

import png_io

LATENT_STRIDE = 8  # the VAE's downsampling: mask pixel (8i, 8j) becomes latent mask (i, j)


def init_image(width, height):
    """An RGB picture [H, W, 3]: red and green ramps across and down, a blue
    checker of 8x8 cells, a red disc and a blue bar."""
    y, x = np.mgrid[0:height, 0:width]
    rgb = np.stack([x * 255 // max(width - 1, 1), y * 255 // max(height - 1, 1),
                    np.where((x // 8 + y // 8) % 2 == 0, 64, 160)], axis=-1)
    disc = (x - width * 3 // 10) ** 2 + (y - height // 2) ** 2 <= (height // 4) ** 2
    rgb[disc] = (230, 40, 40)
    bar = (x >= width * 6 // 10) & (x < width * 17 // 20) & (y >= height // 5) & (y < height * 7 // 10)
    rgb[bar] = (30, 60, 200)
    return rgb.astype(np.uint8)


def inpaint_mask(width, height):
    """A grey mask [H, W] (255 repainted, 0 kept). Upstream binarizes it at
    0.5 at full size, then picks pixel (8i, 8j) for latent (i, j) (nearest).

    - a white rectangle x in [19, 51), y in [11, 35): no edge on the 8-pixel
      grid, so sampling pixel centres (8i + 4) instead of corners moves
      both edges of the latent mask;
    - grey 127 (0.498: kept) and 128 (0.502: repainted) on sampled pixels,
      inside the rectangle and outside it;
    - a grey ramp down the band x in [68, 76), sampled at x = 72: latent
      rows 0-2 kept, 3-5 repainted (at 48 px high).
    """
    mask = np.zeros((height, width), dtype=np.uint8)
    mask[11:min(35, height), 19:min(51, width)] = 255
    for (x, y, grey) in ((24, 16, 127), (32, 24, 128), (64, 40, 128), (8, 8, 127)):
        if x < width and y < height:
            mask[y, x] = grey
    if width >= 76:
        ramp = np.round(np.arange(height) * 255.0 / max(height - 1, 1)).astype(np.uint8)
        mask[:, 68:76] = ramp[:, None]
    return mask


def write_png(path, pixels):
    """Writes a uint8 array [H, W] (grey) or [H, W, 3] (RGB) as an 8-bit PNG."""
    channels = 1 if pixels.ndim == 2 else pixels.shape[2]
    with open(path, "wb") as f:
        f.write(png_io.encode_png(np.ascontiguousarray(pixels).tobytes(), pixels.shape[1], pixels.shape[0], channels))
    return os.path.basename(path)
