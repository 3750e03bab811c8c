#!/usr/bin/env python3
"""Loads a pipeline's components, generates a PNG with progress, unloads them.

    python3 generate_png.py --address localhost:50051 --pipeline z-image-turbo \
        --prompt "a lighthouse at dusk" --out lighthouse.png

Generate would load the components itself; loading them first, concurrently,
shows load progress and keeps them for the generations that follow.

FLUX.1-dev with true classifier-free guidance, its text encoders kept out of
FP8 storage (each loaded dense, and the Generate asking for them so):

    python3 generate_png.py --pipeline flux1-dev --components text_encoder,text_encoder_2,transformer,vae \
        --prompt "a lighthouse at dusk" --negative "blurry" --true_cfg 3 --dense text_encoder,text_encoder_2

img2img from a PNG of the output's size (its size when --width/--height are
0), and inpainting with a mask PNG (white repainted, black kept); two images
from one seed are written as lighthouse-0.png and lighthouse-1.png:

    python3 generate_png.py --pipeline z-image-turbo --prompt "a lighthouse at dusk" \
        --image photo.png --strength 0.6 --num_images 2 --seed 7 --out lighthouse.png
    python3 generate_png.py --pipeline z-image-turbo --prompt "a red door" \
        --image photo.png --mask door-mask.png --seeds 1,2 --out door.png

FLUX's (and Qwen-Image's) inpainting can work on the mask's box only, as
upstream's padding_mask_crop: the box padded by 32 pixels, grown to 1:1, is
inpainted at 1024x1024 and pasted back into a photo of any size:

    python3 generate_png.py --pipeline flux1-dev --components text_encoder,text_encoder_2,transformer,vae \
        --prompt "a red door" --image photo.png --mask door-mask.png --padding_mask_crop 32 \
        --width 1024 --height 1024 --out door.png
"""

import argparse
import asyncio
import os

from diffusiond_client import AsyncClient


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def out_path(out: str, index: int, count: int) -> str:
    """--out itself for one image; out-<index>.png for each of a batch."""
    if count == 1:
        return out
    stem, ext = os.path.splitext(out)
    return f"{stem}-{index}{ext or '.png'}"


async def main(a: argparse.Namespace) -> None:
    names = a.components.split(",")
    dense = [name for name in a.dense.split(",") if name]
    # The same options for the load and the Generate: a cached model loaded
    # otherwise would be refused.
    options = {name: {"fp8": "off"} for name in dense}
    async with AsyncClient(a.address, timeout=a.timeout) as client:
        await client.wait_for_ready()
        infos = await asyncio.gather(*(client.load_model(
            f"{a.pipeline}/{name}", fp8="off" if name in dense else None,
            on_progress=lambda p, name=name: print(f"load {a.pipeline}/{name}: {p.bytes_read}/{p.total_bytes} bytes"))
            for name in names))
        print("loaded", ", ".join(f"{i.model_id} ({i.ram_bytes >> 20} MiB)" for i in infos))
        seeds = [int(s) for s in a.seeds.split(",")] if a.seeds else None
        images = await client.generate_images(
            a.pipeline, a.prompt, a.negative, width=a.width, height=a.height, steps=a.steps, seed=a.seed,
            guidance_scale=a.guidance, true_cfg_scale=a.true_cfg, component_options=options,
            image=read_bytes(a.image) if a.image else None, mask_image=read_bytes(a.mask) if a.mask else None,
            strength=a.strength, num_images_per_prompt=a.num_images, seeds=seeds,
            padding_mask_crop=a.padding_mask_crop,
            on_progress=lambda p: print(f"{p.stage} {p.model_id} {p.step}/{p.steps} {p.seconds:.2f} s"))
        for image in images:
            path = image.save(out_path(a.out, image.index, len(images)))
            print(f"wrote {path}: {image.width}x{image.height}, seed {image.seed}")
        for info in infos:
            freed = await client.unload_model(info.model_id)
            print(f"unloaded {info.model_id}: {freed.ram_bytes_freed >> 20} MiB freed")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", default="localhost:50051")
    parser.add_argument("--pipeline", required=True, help="a pipeline folder in the daemon's models directory")
    parser.add_argument("--components", default="text_encoder,transformer,vae")
    parser.add_argument("--prompt", required=True)
    parser.add_argument("--negative", default=None,
                        help="negative prompt: Z-Image's with --guidance > 0 (its default 5.0), FLUX's with --true_cfg > 1")
    parser.add_argument("--guidance", type=float, default=None,
                        help="upstream's guidance_scale (Z-Image: CFG, 0 off); default: the pipeline's")
    parser.add_argument("--true_cfg", type=float, default=0.0, help="FLUX's true classifier-free guidance scale")
    parser.add_argument("--dense", default="", help="components kept out of FP8 storage, e.g. text_encoder")
    parser.add_argument("--out", default="out.png")
    parser.add_argument("--width", type=int, default=0, help="0: the pipeline's default")
    parser.add_argument("--height", type=int, default=0)
    parser.add_argument("--steps", type=int, default=0)
    parser.add_argument("--seed", type=int, default=None, help="default: a random seed (unless --seeds)")
    parser.add_argument("--seeds", default="", help="one seed per image, e.g. 1,2 (instead of --seed)")
    parser.add_argument("--num_images", type=int, default=0, help="images from the prompt; 0: 1 (or one per seed)")
    parser.add_argument("--image", default=None, help="init image PNG: img2img (inpainting with --mask)")
    parser.add_argument("--mask", default=None, help="mask PNG, the image's size: white repainted, black kept")
    parser.add_argument("--padding_mask_crop", type=int, default=None,
                        help="with --mask (FLUX, Qwen-Image): inpaint the mask's box padded by this many pixels "
                             "at --width x --height, pasted back into the image (of any size)")
    parser.add_argument("--strength", type=float, default=0.0,
                        help="(0, 1]: how much of the schedule runs from --image; 0: the family's default")
    parser.add_argument("--timeout", type=float, default=600, help="deadline per call, seconds")
    asyncio.run(main(parser.parse_args()))
