#!/usr/bin/env python3
"""How fast a daemon refuses bad Generate image inputs, and that it loads
nothing for them: a benchmark of issue 43's "refused before any load,
within 100 ms, naming the field" (docs/benchmarks.md records the figures).

Runs a daemon over a pipeline folder that e2e_modes_refgen.py wrote (its
init and mask PNGs), sends each bad request once, and prints a table of the
wall time and the error; exits 1 if any request is accepted or a model is
left loaded.

Usage: refusal_latency.py --daemon build/release/server/diffusiond --folder OUT/zimage-pipe
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import vs_upstream_generate  # noqa: E402  (its daemon start, and the client's path)
import diffusiond_client as dc  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--folder", required=True, help="e2e_modes_refgen.py's <family>-pipe folder")
    args = ap.parse_args()
    folder = os.path.abspath(args.folder)
    proc, client = vs_upstream_generate.start_daemon(os.path.abspath(args.daemon), folder)
    ok = True
    try:
        read = lambda name: open(os.path.join(folder, name), "rb").read()  # noqa: E731
        image, other = read("init_80x48.png"), read("init_64x64.png")
        cases = {
            "a mask of another size": dict(image=image, mask_image=other),
            "strength 1.5": dict(image=image, strength=1.5),
            "an image of another size": dict(image=other, width=80, height=48),
            "num_images_per_prompt 100": dict(num_images_per_prompt=100),
            "a negative prompt with guidance 0": dict(guidance_scale=0.0, negative_prompt="blurry"),
            "max_sequence_length 5000": dict(max_sequence_length=5000),
        }
        print("| bad input | refused in | error |")
        print("|---|---|---|")
        for name, kwargs in cases.items():
            negative = kwargs.pop("negative_prompt", None)
            start = time.perf_counter()
            try:
                client.generate_images("pipe", "a fox", negative, steps=2, seed=1, **kwargs)
                answer, ok = "accepted", False
            except dc.DiffusiondError as e:
                answer = str(e).split("INVALID_ARGUMENT: ")[-1][:100]
                ok = ok and isinstance(e, dc.InvalidArgumentError)
            print(f"| {name} | {1000 * (time.perf_counter() - start):.1f} ms | {answer} |")
        loaded = [m.model_id for m in client.list_models()]
        print(f"models loaded afterwards: {loaded or 'none'}")
        ok = ok and not loaded
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
