#!/usr/bin/env python3
"""Runs the daemon's Generate on the cases of the upstream references and
compares each image with upstream's own pipeline __call__ image, level by
level in 8 bits.

The generators write the references, per family, into OUT/<family>-pipe/
beside a tiny pipeline folder (pipe/):
- e2e_pipe_refgen.py (the shared reference generators): cases.json (one
  txt2img __call__ per case: prompt, negative prompt, size, steps, seed,
  upstream_guidance, the older daemon_guidance, true_cfg_scale) and
  ref.safetensors (<case>.image_u8, [H, W, 3]);
- e2e_modes_refgen.py, e2e_qwen_refgen.py and e2e_wan_refgen.py (here):
  modes_cases.json (img2img, inpainting, batches, FLUX true CFG, Wan's
  videos: each case as a client sends it, with the init/mask PNG files it
  names and its images' or videos' keys in batch order) and
  modes_ref.safetensors. A video case (video_keys) is asked for its frames
  as PNGs (video_format "png_frames") and compared over all of them.
- e2e_mask_crop_refgen.py (here): mask_crop_cases.json and
  mask_crop_ref.safetensors, inpainting with padding_mask_crop (FLUX,
  Qwen-Image), whose images have the init image's size;
- e2e_lora_refgen.py (here): lora_cases.json and lora_ref.safetensors,
  FLUX txt2img with LoRA adapters (files in the family folder, named by
  their file name there), one or several stacked with weights.
This script starts a daemon over each folder with FP8 off (the references
are float32), asks it for every case through the Python client (generate,
or generate_images for a batch; the PNGs' bytes as image and mask_image;
strength, seed or seeds, num_images_per_prompt, padding_mask_crop, and a
LoRA case's adapters as (file name, weight) pairs, which needs a client
with the adapters keyword), and prints a table of the largest level
difference and how many values differ, one row per image. It sends
upstream's guidance_scale for every case: a shared case's daemon_guidance
predates Z-Image's guidance_scale taking upstream's meaning.
It exits 1 when an image is over --max_levels (default 1: the noise floor
of float32 across BLAS kernels and batch shapes).

Usage: vs_upstream_generate.py --daemon build/release/server/diffusiond
           --refs OUT [--family flux] [--case flux-truecfg] [--max_levels 1]
       vs_upstream_generate.py --refs OUT --dry_run   (the requests, no daemon)
"""
import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
sys.path.insert(0, HERE)
import diffusiond_client as dc  # noqa: E402
from png_io import decode_png_rgb8  # noqa: E402


def read_safetensors_u8(path, key):
    """The bytes and shape of U8 tensor `key` of a safetensors file."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        entry = header[key]
        if entry["dtype"] != "U8":
            raise ValueError(f"{key} is {entry['dtype']}, expected U8")
        begin, end = entry["data_offsets"]
        f.seek(8 + n + begin)
        return f.read(end - begin), entry["shape"]


def shared_case(c):
    """A case of e2e_pipe_refgen.py's cases.json in modes_cases.json's form."""
    return dict(name=c["name"], mode="txt2img", prompt=c["prompt"], negative_prompt=c["negative_prompt"],
                width=c["width"], height=c["height"], steps=c["steps"], seed=c["seed"], seeds=[],
                guidance_scale=c["upstream_guidance"], true_cfg_scale=c.get("true_cfg_scale", 0.0), strength=0.0,
                num_images_per_prompt=0, image="", mask="", image_keys=[f"{c['name']}.image_u8"])


def load_cases(folder):
    """(pipeline folder, cases) of a <family>-pipe folder: the shared
    script's, then this project's modes, mask crops and LoRA cases, the
    later winning a name two have."""
    pipeline, cases = None, {}
    for file_name, ref, convert in (("cases.json", "ref.safetensors", shared_case),
                                    ("modes_cases.json", "modes_ref.safetensors", dict),
                                    ("mask_crop_cases.json", "mask_crop_ref.safetensors", dict),
                                    ("lora_cases.json", "lora_ref.safetensors", dict)):
        path = os.path.join(folder, file_name)
        if not os.path.isfile(path):
            continue
        with open(path) as f:
            spec = json.load(f)
        pipeline = spec["pipeline_folder"]
        for c in spec["cases"]:
            c = convert(c)
            cases.pop(c["name"], None)
            cases[c["name"]] = dict(c, ref=ref)
    if pipeline is None:
        raise RuntimeError(f"{folder} has none of cases.json, modes_cases.json, mask_crop_cases.json, "
                           "lora_cases.json")
    return pipeline, list(cases.values())


def generate_arguments(folder, c):
    """The keyword arguments of Client.generate/generate_images for case `c`."""
    kwargs = dict(width=c["width"], height=c["height"], steps=c["steps"], guidance_scale=c["guidance_scale"],
                  true_cfg_scale=c["true_cfg_scale"], strength=c["strength"],
                  num_images_per_prompt=c["num_images_per_prompt"])
    if c["seeds"]:
        kwargs["seeds"] = c["seeds"]
    else:
        kwargs["seed"] = c["seed"]
    if c.get("sigmas"):
        kwargs["sigmas"] = c["sigmas"]
        kwargs["steps"] = 0  # the sigmas' count is the steps
    if c.get("max_sequence_length"):
        kwargs["max_sequence_length"] = c["max_sequence_length"]
    if is_video(c):  # WanPipeline takes neither true_cfg_scale nor strength
        for name in ("true_cfg_scale", "strength"):
            kwargs.pop(name)
        kwargs.update(num_frames=c["num_frames"], guidance_scale_2=c.get("guidance_scale_2"))
    if c.get("padding_mask_crop") is not None:
        kwargs["padding_mask_crop"] = c["padding_mask_crop"]
    if c.get("adapters"):  # only then: a case without adapters asks what it asked before adapters existed
        kwargs["adapters"] = [(a["path"], a["weight"]) for a in c["adapters"]]
    for field, file_name in (("image", c["image"]), ("mask_image", c["mask"])):
        if file_name:
            with open(os.path.join(folder, file_name), "rb") as f:
                kwargs[field] = f.read()
    return kwargs


def is_video(c):
    """Whether case `c` is a video pipeline's (e2e_wan_refgen.py's cases)."""
    return bool(c.get("video_keys"))


def generate(client, folder, pipeline, c):
    """The daemon's images for case `c`, in batch order; for a video case
    its Videos, with the frames as PNGs."""
    kwargs = generate_arguments(folder, c)
    negative = c["negative_prompt"] or None
    if is_video(c):
        return client.generate_videos(pipeline, c["prompt"], negative, video_format="png_frames", **kwargs)
    if len(c["image_keys"]) > 1:
        return client.generate_images(pipeline, c["prompt"], negative, **kwargs)
    return [client.generate(pipeline, c["prompt"], negative, **kwargs)]


def compare_videos(folder, c, videos):
    """compare()'s rows for a video case, one per video, over all its
    frames."""
    keys = c["video_keys"]
    if len(videos) != len(keys):
        raise RuntimeError(f"{c['name']}: the daemon gave {len(videos)} videos, upstream {len(keys)}")
    rows = []
    for k, (video, key) in enumerate(zip(videos, keys)):
        if (video.index, video.seed) != (k, c["seed"]):
            raise RuntimeError(f"{c['name']}: video {k} came as index {video.index}, seed {video.seed}")
        ref, shape = read_safetensors_u8(os.path.join(folder, c["ref"]), key)
        if [len(video.frame_pngs), video.height, video.width, 3] != shape:
            raise RuntimeError(f"{c['name']}: the daemon gave {len(video.frame_pngs)} frames of "
                               f"{video.width}x{video.height}, upstream {shape}")
        ours = b"".join(decode_png_rgb8(png)[0] for png in video.frame_pngs)
        diffs = [abs(a - b) for a, b in zip(ours, ref)]
        label = c["name"] if len(keys) == 1 else f"{c['name']}[{k}]"
        rows.append((label, max(diffs), sum(1 for d in diffs if d), len(diffs)))
    return rows


def compare(folder, c, images):
    """Rows (label, largest level difference, values off, values) for each
    image of case `c` against its reference; RuntimeError when the daemon's
    answer does not fit (count, index, seed, size)."""
    if is_video(c):
        return compare_videos(folder, c, images)
    keys = c["image_keys"]
    if len(images) != len(keys):
        raise RuntimeError(f"{c['name']}: the daemon gave {len(images)} images, upstream {len(keys)}")
    rows = []
    for k, (image, key) in enumerate(zip(images, keys)):
        seed = c["seeds"][k] if c["seeds"] else c["seed"]
        if (image.index, image.seed) != (k, seed):
            raise RuntimeError(f"{c['name']}: image {k} came as index {image.index}, seed {image.seed}; "
                               f"expected index {k}, seed {seed}")
        ours, size = decode_png_rgb8(image.png)
        ref, shape = read_safetensors_u8(os.path.join(folder, c["ref"]), key)
        if [size[1], size[0], 3] != shape:
            raise RuntimeError(f"{c['name']}: the daemon gave {size[0]}x{size[1]}, upstream {shape}")
        diffs = [abs(a - b) for a, b in zip(ours, ref)]
        label = c["name"] if len(keys) == 1 else f"{c['name']}[{k}]"
        rows.append((label, max(diffs), sum(1 for d in diffs if d), len(diffs)))
    return rows


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_serving(client, proc, log):
    deadline = time.time() + 60
    while True:
        try:
            if client.health() == "SERVING":
                return
        except dc.DiffusiondError:
            pass
        if time.time() > deadline or proc.poll() is not None:
            log.seek(0)
            raise RuntimeError("the daemon did not start:\n" + log.read().decode(errors="replace"))
        time.sleep(0.2)


def start_daemon(daemon, folder):
    """(process, client) of a daemon serving `folder` with FP8 off in float32, once
    it is serving; RuntimeError with its log when it does not start."""
    port, metrics = free_port(), free_port()
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([daemon, f"--models_dir={folder}", f"--listen=127.0.0.1:{port}",
                             f"--metrics_listen=127.0.0.1:{metrics}", "--fp8=off", "--compute_dtype=float32"],
                            stdout=log, stderr=log)
    client = dc.Client(f"127.0.0.1:{port}")
    try:
        wait_until_serving(client, proc, log)
    except RuntimeError:
        proc.kill()
        raise
    return proc, client


def run_family(daemon, folder, only_case):
    """Rows of every case of one <family>-pipe folder, from a daemon of its own."""
    pipeline, cases = load_cases(folder)
    proc, client = start_daemon(daemon, folder)
    rows = []
    try:
        for c in cases:
            if not only_case or c["name"] == only_case:
                rows += compare(folder, c, generate(client, folder, pipeline, c))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return rows


def dry_run(folder, only_case):
    """Prints each case's request as the client would send it, and checks
    that its references exist; no daemon."""
    pipeline, cases = load_cases(folder)
    for c in cases:
        if only_case and c["name"] != only_case:
            continue
        kwargs = generate_arguments(folder, c)
        for field in ("image", "mask_image"):
            if field in kwargs:
                kwargs[field] = f"<{len(kwargs[field])} bytes of {c['image' if field == 'image' else 'mask']}>"
        for key in c["image_keys"] + c.get("video_keys", []):
            read_safetensors_u8(os.path.join(folder, c["ref"]), key)
        call = "generate_videos" if is_video(c) else "generate_images" if len(c["image_keys"]) > 1 else "generate"
        print(f"{c['name']}: {call}({pipeline!r}, {c['prompt']!r}, {c['negative_prompt'] or None!r}, "
              f"{', '.join(f'{k}={v!r}' for k, v in kwargs.items())}) vs {c['ref']} {c['image_keys'] or c['video_keys']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--daemon", help="the diffusiond binary (not needed with --dry_run)")
    ap.add_argument("--refs", required=True, help="the references' --out-root")
    ap.add_argument("--family", help="one family's folder only (zimage, flux, ...)")
    ap.add_argument("--case", help="one case only")
    ap.add_argument("--max_levels", type=int, default=1)
    ap.add_argument("--dry_run", action="store_true", help="print the requests and check the references")
    args = ap.parse_args()
    if not args.dry_run and not args.daemon:
        ap.error("--daemon is required (or --dry_run)")
    folders = [os.path.abspath(os.path.join(args.refs, name)) for name in sorted(os.listdir(args.refs))
               if name.endswith("-pipe") and (not args.family or name == f"{args.family}-pipe")]
    if args.dry_run:
        for folder in folders:
            dry_run(folder, args.case)
        return 0
    ok = True
    print("| case | max level difference (8 bits) | values off |")
    print("|---|---|---|")
    for folder in folders:
        for label, worst, off, total in run_family(os.path.abspath(args.daemon), folder, args.case):
            ok = ok and worst <= args.max_levels
            print(f"| `{label}` | {worst} | {off} of {total:,} |", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
