#!/usr/bin/env python3
"""Upstream references for Generate on Wan 2.1 and Wan 2.2 (two experts):
diffusers' own WanPipeline.__call__, prompt to video, on tiny pipeline
folders in the real layout.

The shared e2e_pipe_refgen.py (--shared-refgen; default ../shared/refgen
beside the repository) does the upstream import (diffusers and transformers
from source trees, on torch 1.13, a PIL stand-in); this script adds the Wan
modules to it and builds, per family, OUT/<family>-pipe/pipe/:
  wan21-pipe/pipe/  model_index.json (WanPipeline, boundary_ratio null),
                    scheduler/ (UniPCMultistepScheduler, flow_shift 3.0, as
                    shared/fixtures/wan-tiny), text_encoder/ + tokenizer/
                    (shared/fixtures/umt5-tiny: UMT5EncoderModel, its
                    SentencePiece tokenizer), transformer/ (a fresh random
                    WanTransformer3DModel: wan-tiny's config with text_dim
                    64, the UMT5's width), vae/ (shared/fixtures/
                    wan-vae-tiny: AutoencoderKLWan)
  wan22-pipe/pipe/  the same with a second expert, transformer_2/ (other
                    weights) and model_index.json's boundary_ratio 0.9
                    (shared/fixtures/wan22-tiny/model_index_fragment.json)
The pipelines are built from the folder's components, loaded back from
disk, and run float32 on the CPU, 1 thread, on the CASES below with
output_type="np".

Each family folder gets what vs_upstream_generate.py reads, in
e2e_modes_refgen.py's format: modes_cases.json (per case what a client
sends: prompt, negative_prompt ("": none sent), width, height, num_frames,
steps, seed, guidance_scale (null: not passed), guidance_scale_2 (null: not
passed), num_images_per_prompt; the effective values; video_keys, its
videos' keys in batch order) and modes_ref.safetensors, README.md.

The frames' uint8 conversion: output_type="np" gives float32 frames in
[0, 1]; each is round-half-to-even(float32(x * 255)), numpy_to_pil's and
the daemon's rounding for images. (export_to_video writes (x *
255).astype(uint8), a truncation: at most one level below.)

What this checks, bit for bit, against recomputations in the draw order a
port must follow: the transformer's first input is torch.randn([N, 16,
(F - 1) / 4 + 1, H / 8, W / 8], generator) (prepare_latents), the
scheduler's timesteps, which expert ran each step (t >= boundary_ratio *
1000: transformer) and with which scale, that both passes of a step see
the same latents, and the frames from the final latents (latents / (1 /
latents_std) + latents_mean, vae.decode, postprocess_video).

Usage (Debian python3-torch 1.13, no pip; about 30 s on 2 cores):
  /usr/bin/python3 tools/e2e/e2e_wan_refgen.py --transformers-src TRANSFORMERS_V4_57_SRC \\
      --diffusers-src DIFFUSERS_SRC --out-root OUT [--shared-refgen DIR] [--only wan21|wan22] [--case NAME]
"""
import argparse
import importlib
import inspect
import json
import os
import shutil
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import e2e_modes_refgen as modes  # noqa: E402

DIFFUSERS_COMMIT = "58eb52c0803ea9af3abec60841c2a093bdf1f951"
TRANSFORMERS_COMMIT = "753d61104116eefc8ffc977327b441ee0c8d599f"
PROMPT = "a red fox running through snow, morning light"
NEGATIVE = "blurry, low quality"


def case(name, prompt=PROMPT, width=64, height=48, num_frames=9, steps=4, seed=11, guidance_scale=None,
         guidance_scale_2=None, negative_prompt="", num_images_per_prompt=0):
    """One upstream __call__ as a client asks for it (None: not passed)."""
    return dict(name=name, mode="txt2img", prompt=prompt, negative_prompt=negative_prompt, width=width,
                height=height, num_frames=num_frames, steps=steps, seed=seed, seeds=[],
                guidance_scale=guidance_scale, guidance_scale_2=guidance_scale_2, true_cfg_scale=0.0,
                strength=0.0, num_images_per_prompt=num_images_per_prompt, image="", mask="")


# Wan's CFG is guidance_scale g: uncond + g(cond - uncond), on at g > 1 (the
# __call__'s default 5.0), the negative "" when none is given; Wan 2.2's
# low-noise expert uses guidance_scale_2 (default: guidance_scale).
CASES = {
    "wan21": [
        case("wan21-cfg", negative_prompt=NEGATIVE),  # guidance 5.0, 9 frames, 64x48
        case("wan21-nocfg", width=48, height=32, num_frames=5, guidance_scale=1.0),
        case("wan21-batch2", width=32, height=32, num_frames=5, seed=13, guidance_scale=3.0,
             num_images_per_prompt=2),
    ],
    "wan22": [
        case("wan22-g2", guidance_scale=4.0, guidance_scale_2=2.0, negative_prompt=NEGATIVE),
        case("wan22-default-g2", width=48, height=64, num_frames=5, guidance_scale=3.0),
    ],
}
FAMILIES = {"wan21": dict(seed=20261201, experts=1), "wan22": dict(seed=20261202, experts=2)}
TEXT_FIXTURE, TRANSFORMER_FIXTURE, VAE_FIXTURE, WAN22_FIXTURE = "umt5-tiny", "wan-tiny", "wan-vae-tiny", "wan22-tiny"


# ----------------------------------------------------------------------------- upstream import
def import_upstream(shared, transformers_src, diffusers_src):
    """The shared generator's import, plus Wan's modules (pipelines.wan's
    package __init__ bare, its LoRA mixin empty)."""
    up = shared.import_upstream(transformers_src, diffusers_src)
    hc = shared.hc
    import diffusers
    import diffusers.loaders as dl
    hc._bare_packages("diffusers", os.path.dirname(diffusers.__file__), ["pipelines.wan"])
    hc.note("diffusers: package __init__ of pipelines.wan replaced by an empty package")
    try:
        getattr(dl, "WanLoraLoaderMixin")
    except Exception:
        dl.WanLoraLoaderMixin = type("WanLoraLoaderMixin", (), {})
        hc.note("diffusers.loaders.WanLoraLoaderMixin -> empty mixin (LoRA loading; unused)")
    up.dc = importlib.import_module("dit_common")
    up.twan = importlib.import_module("diffusers.models.transformers.transformer_wan")
    up.vwan = importlib.import_module("diffusers.models.autoencoders.autoencoder_kl_wan")
    up.unipc = importlib.import_module("diffusers.schedulers.scheduling_unipc_multistep")
    up.pwan = importlib.import_module("diffusers.pipelines.wan.pipeline_wan")
    up.umt5 = importlib.import_module("transformers.models.umt5.modeling_umt5")
    return up


# ----------------------------------------------------------------------------- folders
def fixture(shared, *parts):
    return os.path.join(shared.SHARED, *parts)


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def boundary_ratio(shared, family):
    if FAMILIES[family]["experts"] == 1:
        return None
    return read_json(fixture(shared, WAN22_FIXTURE, "model_index_fragment.json"))["boundary_ratio"]


def model_index(shared, up, family):
    two = FAMILIES[family]["experts"] == 2
    return {"_class_name": "WanPipeline", "_diffusers_version": up.version,
            "boundary_ratio": boundary_ratio(shared, family), "expand_timesteps": False,
            "scheduler": ["diffusers", "UniPCMultistepScheduler"],
            "text_encoder": ["transformers", "UMT5EncoderModel"], "tokenizer": ["transformers", "T5Tokenizer"],
            "transformer": ["diffusers", "WanTransformer3DModel"],
            "transformer_2": ["diffusers", "WanTransformer3DModel"] if two else [None, None],
            "vae": ["diffusers", "AutoencoderKLWan"]}


def transformer_config(shared):
    """wan-tiny's config, its text input the UMT5's width."""
    cfg = read_json(fixture(shared, TRANSFORMER_FIXTURE, "config.json"))
    cfg = {k: v for k, v in cfg.items() if not k.startswith("_")}
    cfg["text_dim"] = read_json(fixture(shared, TEXT_FIXTURE, "config.json"))["d_model"]
    return cfg


def build_folder(shared, up, family, root):
    """Writes root/pipe/ in the diffusers layout; returns its path."""
    spec = FAMILIES[family]
    pipe_dir = os.path.join(root, "pipe")
    if os.path.isdir(pipe_dir):
        shutil.rmtree(pipe_dir)
    shared.write_json(os.path.join(pipe_dir, "model_index.json"), model_index(shared, up, family))
    sched = read_json(fixture(shared, TRANSFORMER_FIXTURE, "scheduler_config.json"))
    shared.write_json(os.path.join(pipe_dir, "scheduler", "scheduler_config.json"),
                      {"_class_name": "UniPCMultistepScheduler", "_diffusers_version": up.version,
                       **{k: v for k, v in sched.items() if not k.startswith("_")}})
    os.makedirs(os.path.join(pipe_dir, "text_encoder"))
    for name in ("config.json", "model.safetensors"):
        shutil.copyfile(fixture(shared, TEXT_FIXTURE, name), os.path.join(pipe_dir, "text_encoder", name))
    shutil.copytree(fixture(shared, TEXT_FIXTURE, "tokenizer"), os.path.join(pipe_dir, "tokenizer"))
    os.makedirs(os.path.join(pipe_dir, "vae"))
    shutil.copyfile(fixture(shared, VAE_FIXTURE, "config.json"), os.path.join(pipe_dir, "vae", "config.json"))
    shutil.copyfile(fixture(shared, VAE_FIXTURE, "vae", "diffusion_pytorch_model.safetensors"),
                    os.path.join(pipe_dir, "vae", "diffusion_pytorch_model.safetensors"))
    for k, name in enumerate(["transformer", "transformer_2"][:spec["experts"]]):
        seed = spec["seed"] + 10 * k
        torch.manual_seed(seed)
        model = up.twan.WanTransformer3DModel(**transformer_config(shared)).eval()
        up.dc.init_random_bf16_(model, seed)
        shared.write_transformer(model, os.path.join(pipe_dir, name))
    return pipe_dir


def load_pipeline(shared, up, family, pipe_dir):
    """The WanPipeline of the folder's components, loaded from disk."""
    from transformers import AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(os.path.join(pipe_dir, "tokenizer"), use_fast=False)
    encoder = up.umt5.UMT5EncoderModel.from_pretrained(os.path.join(pipe_dir, "text_encoder"),
                                                        dtype=torch.float32).eval()
    assert encoder.dtype == torch.float32
    experts = [shared.load_diffusers_model(up.twan.WanTransformer3DModel, os.path.join(pipe_dir, name))
               for name in ["transformer", "transformer_2"][:FAMILIES[family]["experts"]]]
    vae = shared.load_diffusers_model(up.vwan.AutoencoderKLWan, os.path.join(pipe_dir, "vae"))
    scheduler = up.unipc.UniPCMultistepScheduler.from_config(
        read_json(os.path.join(pipe_dir, "scheduler", "scheduler_config.json")))
    index = read_json(os.path.join(pipe_dir, "model_index.json"))
    assert experts[0].config.text_dim == encoder.config.d_model
    pipe = up.pwan.WanPipeline(tokenizer=tokenizer, text_encoder=encoder, vae=vae, scheduler=scheduler,
                               transformer=experts[0], transformer_2=experts[1] if len(experts) > 1 else None,
                               boundary_ratio=index["boundary_ratio"], expand_timesteps=index["expand_timesteps"])
    registered = {k: v for k, v in pipe.config.items() if k in ("boundary_ratio", "expand_timesteps")}
    assert registered == {k: index[k] for k in registered}, (registered, index)
    pipe.set_progress_bar_config(disable=True)
    return pipe


# ----------------------------------------------------------------------------- one __call__
class Calls:
    """Wraps a transformer's forward to keep each call's keyword arguments."""

    def __init__(self, module, tag, log):
        self.module = module
        forward = module.forward

        def recorded(*args, **kwargs):
            assert not args, "WanPipeline calls its transformer by keyword"
            log.append((tag, {k: v.detach().clone() if torch.is_tensor(v) else v for k, v in kwargs.items()}))
            return forward(**kwargs)

        module.forward = recorded

    def remove(self):
        del self.module.forward


def effective(pipe, c):
    """What upstream ran with: the __call__'s defaults for what the case
    does not pass, and whether it guided."""
    defaults = {k: p.default for k, p in inspect.signature(type(pipe).__call__).parameters.items()}
    g = defaults["guidance_scale"] if c["guidance_scale"] is None else c["guidance_scale"]
    g2 = c["guidance_scale_2"] if c["guidance_scale_2"] is not None else g
    return {"guidance_scale": g, "guidance_scale_2": g2 if pipe.config.boundary_ratio is not None else None,
            "cfg": g > 1.0, "negative_prompt_encoded": (c["negative_prompt"] if g > 1.0 else None)}


def to_u8(frames):
    """float32 [F, H, W, 3] in [0, 1] -> uint8, as numpy_to_pil rounds."""
    assert frames.dtype == np.float32
    return (frames * 255).round().astype(np.uint8)


def call_upstream(pipe, c):
    """Runs one case; returns (uint8 videos [N, F, H, W, 3], the transformer
    calls in order as (expert, kwargs), the latents after the last step)."""
    kwargs = dict(prompt=c["prompt"], height=c["height"], width=c["width"], num_frames=c["num_frames"],
                  num_inference_steps=c["steps"], generator=torch.Generator("cpu").manual_seed(c["seed"]),
                  num_videos_per_prompt=modes.image_count(c), output_type="np", return_dict=False)
    if c["negative_prompt"]:
        kwargs["negative_prompt"] = c["negative_prompt"]
    for name in ("guidance_scale", "guidance_scale_2"):
        if c[name] is not None:
            kwargs[name] = c[name]
    last = []

    def on_step(p, i, t, kw):
        last[:] = [kw["latents"].detach().clone()]
        return {}

    log = []
    calls = [Calls(pipe.transformer, "transformer", log)]
    if pipe.transformer_2 is not None:
        calls.append(Calls(pipe.transformer_2, "transformer_2", log))
    try:
        with torch.no_grad():
            video = pipe(callback_on_step_end=on_step, **kwargs)[0]
    finally:
        for call in calls:
            call.remove()
    assert video.shape == (modes.image_count(c), c["num_frames"], c["height"], c["width"], 3), video.shape
    return np.stack([to_u8(v) for v in video]), log, last[0]


def check_calls(pipe, c, e, log):
    """Call order (cond, then uncond, per step), the noise, the timesteps and
    the expert of each step; returns the intermediates."""
    per_step = 2 if e["cfg"] else 1
    steps = len(log) // per_step
    assert steps == c["steps"] and len(log) == per_step * steps, c["name"]
    n, f = modes.image_count(c), (c["num_frames"] - 1) // 4 + 1
    noise = torch.randn([n, 16, f, c["height"] // 8, c["width"] // 8],
                        generator=torch.Generator("cpu").manual_seed(c["seed"]), dtype=torch.float32)
    assert torch.equal(log[0][1]["hidden_states"], noise), f"{c['name']}: the first input is not prepare_latents'"
    timesteps = pipe.scheduler.timesteps
    boundary = None if pipe.config.boundary_ratio is None else pipe.config.boundary_ratio * 1000
    experts = []
    for i in range(steps):
        tag, kw = log[per_step * i]
        assert torch.equal(kw["timestep"], timesteps[i].expand(n)), c["name"]
        want = "transformer" if boundary is None or timesteps[i] >= boundary else "transformer_2"
        assert tag == want, f"{c['name']}: step {i} ran {tag}, expected {want}"
        experts.append(0 if tag == "transformer" else 1)
        if per_step == 2:
            assert log[2 * i + 1][0] == tag
            assert torch.equal(log[2 * i + 1][1]["hidden_states"], kw["hidden_states"])
    out = {"noise": noise, "timesteps": timesteps.float(), "sigmas": pipe.scheduler.sigmas.float(),
           "experts": np.array(experts, dtype=np.int64), "prompt_embeds": log[0][1]["encoder_hidden_states"][0]}
    if per_step == 2:
        out["negative_prompt_embeds"] = log[1][1]["encoder_hidden_states"][0]
    return out


def decode_check(pipe, u8, final):
    """Decodes the final latents as the pipeline does and asserts the
    frames; returns the largest level difference to export_to_video's
    truncating conversion."""
    cfg = pipe.vae.config
    mean = torch.tensor(cfg.latents_mean).view(1, cfg.z_dim, 1, 1, 1)
    inv_std = 1.0 / torch.tensor(cfg.latents_std).view(1, cfg.z_dim, 1, 1, 1)
    with torch.no_grad():
        video = pipe.vae.decode(final / inv_std + mean, return_dict=False)[0]
    frames = pipe.video_processor.postprocess_video(video, output_type="np")
    assert np.array_equal(np.stack([to_u8(v) for v in frames]), u8)
    truncated = (frames * 255).astype(np.uint8)
    return int(np.abs(truncated.astype(np.int32) - u8.astype(np.int32)).max())


def run_case(pipe, c):
    """(reference tensors, cases-file record) of one case."""
    e = effective(pipe, c)
    u8, log, final = call_upstream(pipe, c)
    r = check_calls(pipe, c, e, log)
    r["final_latents"] = final
    levels = decode_check(pipe, u8, final)
    keys = ["video_u8"] if len(u8) == 1 else [f"video_u8.{k}" for k in range(len(u8))]
    r.update(zip(keys, u8))
    stats = {"video_u8_mean": [round(float(v.mean()), 3) for v in u8],
             "final_latents_absmax": round(float(final.abs().max()), 4),
             "experts": r["experts"].tolist(), "max_levels_if_truncated_as_export_to_video": levels}
    record = dict(c, effective_guidance_scale=e["guidance_scale"], effective_guidance_scale_2=e["guidance_scale_2"],
                  cfg=e["cfg"], negative_prompt_encoded=e["negative_prompt_encoded"],
                  timesteps=[int(t) for t in pipe.scheduler.timesteps], video_keys=[f"{c['name']}.{k}" for k in keys],
                  image_keys=[], stats=stats)
    return r, record


# ----------------------------------------------------------------------------- files
def run_family(shared, up, family, root, only_case, argv):
    os.makedirs(root, exist_ok=True)
    pipe_dir = build_folder(shared, up, family, root)
    pipe = load_pipeline(shared, up, family, pipe_dir)
    results, cases = {}, []
    for c in CASES[family]:
        if only_case and c["name"] != only_case:
            continue
        results[c["name"]], record = run_case(pipe, c)
        cases.append(record)
        print(c["name"], json.dumps(record["stats"]), flush=True)
    meta = {"generator": "e2e_wan_refgen.py", "diffusers_commit": argv.diffusers_commit,
            "transformers_commit": argv.transformers_commit}
    shapes = shared.save_ref(os.path.join(root, "modes_ref.safetensors"), results, meta)
    shared.write_json(os.path.join(root, "modes_cases.json"),
                      {"family": family, "pipeline_class": "WanPipeline", "pipeline_folder": "pipe",
                       "diffusers_version": up.version, "torch": torch.__version__, "cases": cases})
    write_readme(shared, up, family, root, cases, shapes, argv)


def case_rows(cases):
    def passed(v, effective):
        return f"({effective})" if v is None else f"{v}"

    rows = []
    for c in cases:
        cfg = ("yes" if c["negative_prompt"] else "yes, negative \"\"") if c["cfg"] else "no"
        g2 = passed(c["guidance_scale_2"], c["effective_guidance_scale_2"]) if c["effective_guidance_scale_2"] else "—"
        rows.append(f"| `{c['name']}` | {json.dumps(c['negative_prompt'])} | {c['width']}x{c['height']} "
                    f"| {c['num_frames']} | {c['steps']} | {c['seed']} | {modes.image_count(c)} "
                    f"| {passed(c['guidance_scale'], c['effective_guidance_scale'])} | {g2} | {cfg} "
                    f"| {c['timesteps']} | {c['stats']['experts']} |")
    return "\n".join(rows)


KEY_DOC = {
    "video_u8": "[F, H, W, 3] uint8: output_type=\"np\" frames, round-half-to-even(x * 255); `video_u8.<k>`: "
                "video k of a batch",
    "noise": "[N, 16, f, h, w] torch.randn of the generator (prepare_latents): the transformer's first input",
    "final_latents": "[N, 16, f, h, w] after the last step (before the VAE de-normalisation)",
    "timesteps": "[steps] the scheduler's (int64 upstream, stored as float)",
    "sigmas": "[steps + 1] the scheduler's",
    "experts": "[steps] int64: 0 transformer, 1 transformer_2",
    "prompt_embeds": "[512, 64] the transformer's encoder_hidden_states (the valid rows, then zeros)",
    "negative_prompt_embeds": "with CFG: the second call's (\"\" when no negative prompt is given)",
}


def write_readme(shared, up, family, root, cases, shapes, argv):
    spec = FAMILIES[family]
    keys = "\n".join(f"| `{k}` | {KEY_DOC[k.split('.', 1)[1].split('.')[0]]} |" for k in sorted(
        {"<case>." + name.split(".", 1)[1].split(".")[0] for name in shapes}))
    shims = "\n".join(f"- {n}" for n in shared.hc.NOTES)
    experts = ("`transformer/` and `transformer_2/`: two fresh `WanTransformer3DModel`s" if spec["experts"] == 2
               else "`transformer/`: a fresh `WanTransformer3DModel`")
    text = f"""# WanPipeline end to end: upstream reference (tiny pipeline folder, {family})

Generated by `/usr/bin/python3 tools/e2e/e2e_wan_refgen.py --transformers-src T --diffusers-src D --out-root OUT`
on CPU, torch {torch.__version__}, 1 thread, float32 throughout (BF16-stored weights upcast to fp32).
Upstream: diffusers {argv.diffusers_commit} (version {up.version}) `pipelines/wan/pipeline_wan.py` `__call__`;
transformers {argv.transformers_commit} (v4.57.6) for UMT5 and its slow T5Tokenizer. The pipeline is constructed from
the components of `pipe/` loaded back from its folders, then called with `prompt=` (the pipeline encodes it itself),
`generator=torch.Generator("cpu").manual_seed(seed)`, `output_type="np"`.

## Pipeline folder `pipe/`

- `model_index.json`: `WanPipeline`, boundary_ratio {json.dumps(boundary_ratio(shared, family))}, expand_timesteps false
- `scheduler/`: UniPCMultistepScheduler (shared/fixtures/{TRANSFORMER_FIXTURE}/scheduler_config.json: flow_shift 3.0,
  flow sigmas, bh2, order 2)
- `text_encoder/`, `tokenizer/`: shared/fixtures/{TEXT_FIXTURE} (UMT5EncoderModel width 64, from_pretrained float32;
  T5Tokenizer, slow)
- {experts} {json.dumps(transformer_config(shared))} (random BF16, dit_common.init_random_bf16_, seeds {spec['seed']}
  and + 10; shared/fixtures/{TRANSFORMER_FIXTURE}'s config with text_dim 64)
- `vae/`: shared/fixtures/{VAE_FIXTURE} (`AutoencoderKLWan`, z_dim 16, 4 frames per latent frame, factor 8)

## Cases (`modes_cases.json`)

Wan's classifier-free guidance is `guidance_scale` g: uncond + g(cond - uncond), on at g > 1 (default 5.0), the
negative "" when none is given. Wan 2.2's low-noise expert (transformer_2, the steps whose timestep is below
boundary_ratio * 1000) uses `guidance_scale_2`, default `guidance_scale`. A value in parentheses was not passed: it is
the `__call__`'s default. `max_sequence_length` is the default, 512. Prompt: {json.dumps(PROMPT)}.

| case | negative | size | frames | steps | seed | videos | guidance_scale | guidance_scale_2 | CFG | timesteps | expert per step |
|---|---|---|---|---|---|---|---|---|---|---|---|
{case_rows(cases)}

## Checks

Asserted bit-identical: the transformer's first input is `torch.randn([N, 16, (F - 1) / 4 + 1, H / 8, W / 8],
generator)`, each step's timestep is the scheduler's, each step ran the expert the boundary says (both passes of a
guided step on the same latents), and the frames equal a decode of the final latents (latents / (1 / latents_std) +
latents_mean, `vae.decode`, `postprocess_video`) converted as above. `stats.max_levels_if_truncated_as_export_to_video`
is how far export_to_video's `(x * 255).astype(uint8)` would move them.

## modes_ref.safetensors

Per case `<case>.<key>` (float32 unless said):

| key | meaning |
|---|---|
{keys}

## Shims (no model math changed)

{shims}

## Use

`/usr/bin/python3 tools/e2e/vs_upstream_generate.py --daemon build/release/server/diffusiond --refs OUT --family
{family}` runs each case through a daemon over this folder (FP8 off, the frames as PNGs) and compares them.

## Notes

- fp32 results depend on the CPU's BLAS kernels at the 1e-6 level; reruns are bit-identical per machine only.
- ftfy is not installed here, so WanPipeline's prompt_clean skips ftfy.fix_text, as the daemon's does.
"""
    with open(os.path.join(root, "README.md"), "w", encoding="utf-8") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared-refgen", default=os.path.join(REPO_ROOT, "..", "shared", "refgen"),
                    help="the folder of e2e_pipe_refgen.py (default: ../shared/refgen beside the repository)")
    ap.add_argument("--transformers-src", required=True)
    ap.add_argument("--transformers-commit", default=TRANSFORMERS_COMMIT)
    ap.add_argument("--diffusers-src", required=True)
    ap.add_argument("--diffusers-commit", default=DIFFUSERS_COMMIT)
    ap.add_argument("--out-root", required=True, help="folder of <family>-pipe/")
    ap.add_argument("--only", choices=tuple(CASES))
    ap.add_argument("--case", help="one case only (its family's files then hold only it)")
    args = ap.parse_args()
    shared = modes.import_shared(args.shared_refgen)
    up = import_upstream(shared, args.transformers_src, args.diffusers_src)
    for family in CASES:
        if not args.only or family == args.only:
            run_family(shared, up, family, os.path.join(args.out_root, f"{family}-pipe"), args.case, args)


if __name__ == "__main__":
    main()
