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
"""

import argparse
import asyncio

from diffusiond_client import AsyncClient


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
        image = await client.generate(
            a.pipeline, a.prompt, a.negative, width=a.width, height=a.height, steps=a.steps, seed=a.seed,
            guidance_scale=a.guidance, true_cfg_scale=a.true_cfg, component_options=options,
            on_progress=lambda p: print(f"{p.stage} {p.model_id} {p.step}/{p.steps} {p.seconds:.2f} s"))
        image.save(a.out)
        print(f"wrote {a.out}: {image.width}x{image.height}, seed {image.seed}")
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
                        help="negative prompt: Z-Image's with --guidance > 1, FLUX's with --true_cfg > 1")
    parser.add_argument("--guidance", type=float, default=0.0, help="guidance_scale; 0: the pipeline's default")
    parser.add_argument("--true_cfg", type=float, default=0.0, help="FLUX's true classifier-free guidance scale")
    parser.add_argument("--dense", default="", help="components kept out of FP8 storage, e.g. text_encoder")
    parser.add_argument("--out", default="out.png")
    parser.add_argument("--width", type=int, default=0, help="0: the pipeline's default")
    parser.add_argument("--height", type=int, default=0)
    parser.add_argument("--steps", type=int, default=0)
    parser.add_argument("--seed", type=int, default=None, help="default: a random seed")
    parser.add_argument("--timeout", type=float, default=600, help="deadline per call, seconds")
    asyncio.run(main(parser.parse_args()))
