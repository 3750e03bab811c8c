#!/usr/bin/env python3
"""Loads a pipeline's components, generates a PNG with progress, unloads them.

    python3 generate_png.py --address localhost:50051 --pipeline z-image-turbo \
        --prompt "a lighthouse at dusk" --out lighthouse.png

Generate would load the components itself; loading them first, concurrently,
shows load progress and keeps them for the generations that follow.
"""

import argparse
import asyncio

from diffusiond_client import AsyncClient


async def main(a: argparse.Namespace) -> None:
    components = [f"{a.pipeline}/{name}" for name in a.components.split(",")]
    async with AsyncClient(a.address, timeout=a.timeout) as client:
        await client.wait_for_ready()
        infos = await asyncio.gather(*(client.load_model(
            path, on_progress=lambda p, path=path: print(f"load {path}: {p.bytes_read}/{p.total_bytes} bytes"))
            for path in components))
        print("loaded", ", ".join(f"{i.model_id} ({i.ram_bytes >> 20} MiB)" for i in infos))
        image = await client.generate(
            a.pipeline, a.prompt, width=a.width, height=a.height, steps=a.steps, seed=a.seed,
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
    parser.add_argument("--out", default="out.png")
    parser.add_argument("--width", type=int, default=0, help="0: the pipeline's default")
    parser.add_argument("--height", type=int, default=0)
    parser.add_argument("--steps", type=int, default=0)
    parser.add_argument("--seed", type=int, default=None, help="default: a random seed")
    parser.add_argument("--timeout", type=float, default=600, help="deadline per call, seconds")
    asyncio.run(main(parser.parse_args()))
