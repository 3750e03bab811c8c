#!/usr/bin/env python3
"""Runs only the denoise loop on the daemon: your own conditioning in, latents out.

    python3 denoise_only.py --address localhost:50051 --model z-image-turbo/transformer \
        --latent-shape 16,128,128 --steps 8 --out latents.f32

For a UI that encodes prompts and decodes latents itself. The conditioning
here is random, shaped from what the model says it reads
(ModelInfo.conditioning); pass real text-encoder features in practice. Ctrl-C
cancels the call on the daemon within a step.
"""

import argparse
import random

from diffusiond_client import Client, WireTensor


def random_conditioning(info, tokens):
    """{name: tensor or scalar} for each required input; -1 dims become ``tokens``."""
    rng = random.Random(0)
    out = {}
    for c in info.conditioning:
        if c.scalar:
            out[c.name] = c.default_value
        elif c.required:
            shape = [tokens if d < 0 else d for d in c.shape]
            count = 1
            for d in shape:
                count *= d
            out[c.name] = WireTensor.from_floats((rng.gauss(0, 1) for _ in range(count)), shape)
    return out


def main(a):
    with Client(a.address, timeout=a.timeout) as client:
        info = client.load_model(a.model)
        call = client.denoise_stream(info.model_id, random_conditioning(info, a.tokens),
                                     shape=[int(s) for s in a.latent_shape.split(",")], steps=a.steps, seed=a.seed)
        try:
            latents = call.result(lambda s: print(f"step {s.step}/{s.steps} sigma {s.sigma:.3f} "
                                                  f"{s.step_seconds * 1000:.0f} ms"))
        except KeyboardInterrupt:
            call.cancel()
            raise
        with open(a.out, "wb") as f:
            f.write(latents.data)  # little-endian float32, row-major
        print(f"wrote {a.out}: {latents.dtype} {list(latents.shape)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", default="localhost:50051")
    parser.add_argument("--model", required=True, help="a denoiser: a loaded model's id or a path to load")
    parser.add_argument("--latent-shape", default="16,128,128", help="C,H,W")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tokens", type=int, default=16, help="length of the random caption")
    parser.add_argument("--out", default="latents.f32")
    parser.add_argument("--timeout", type=float, default=600, help="deadline per call, seconds")
    main(parser.parse_args())
