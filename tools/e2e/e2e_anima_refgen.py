#!/usr/bin/env python3
"""Upstream references for Generate on Anima: diffusers' own
AnimaModularPipeline (AnimaAutoBlocks, text to image) on a tiny pipeline
folder in the real layout.

The shared e2e_pipe_refgen.py (--shared-refgen; default ../shared/refgen
beside the repository) does the upstream import (diffusers and transformers
from source trees, on torch 1.13, a PIL stand-in); this script adds the
modular pipeline and Anima's modules to it, with anima_refgen.py's shims
(torch >= 2.5's SDPA for fully masked rows, torchvision's nearest resize),
and builds OUT/anima-pipe/pipe/:
  modular_model_index.json  AnimaModularPipeline's own save_config, each
                            component's spec pointing at its subfolder as
                            save_pretrained leaves it
  scheduler/                FlowMatchEulerDiscreteScheduler(shift=3.0), as
                            scripts/convert_anima_to_diffusers.py saves it
  text_encoder/ + tokenizer/  shared/fixtures/qwen3-tiny (Qwen3Model, hidden
                            64; Qwen2Tokenizer)
  t5_tokenizer/             shared/fixtures/t5-tiny/tokenizer (T5, slow)
  text_conditioner/         a fresh AnimaTextConditioner (source_dim 64 =
                            Qwen's, target_dim = the transformer's
                            text_embed_dim, the T5 vocabulary, Anima's
                            min_sequence_length 512), random BF16 values
  transformer/              shared/fixtures/anima-tiny's transformer
  vae/                      shared/fixtures/qwenimage-vae-tiny
The pipeline is built from the folder's components loaded back from disk
and run float32 on the CPU, 1 thread, on the CASES below, with the guider
ClassifierFreeGuidance(guidance_scale=g) (4.0, its default, when a case
passes none).

Writes what vs_upstream_generate.py reads, in e2e_modes_refgen.py's format:
modes_cases.json, modes_ref.safetensors (per case image_u8 or image_u8.<k>,
initial_latents, prompt_embeds, negative_prompt_embeds) and README.md.
Checked bit for bit here: the transformer's first input is the documented
draw (randn [N, 16, 1, h, w] of the one generator, or [1, 16, 1, h, w] per
generator of a list), its timesteps are the scheduler's / 1000, and with
CFG the second call of each step is the negative's at the same latents.

Usage (Debian python3-torch 1.13, no pip; about 10 s on 2 cores):
  /usr/bin/python3 tools/e2e/e2e_anima_refgen.py --transformers-src TRANSFORMERS_V4_57_SRC \\
      --diffusers-src DIFFUSERS_SRC --out-root OUT [--shared-refgen DIR] [--case NAME]
"""
import argparse
import importlib
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
from e2e_modes_refgen import case  # noqa: E402

DIFFUSERS_COMMIT = "58eb52c0803ea9af3abec60841c2a093bdf1f951"
TRANSFORMERS_COMMIT = "753d61104116eefc8ffc977327b441ee0c8d599f"
PROMPT = "a red fox in the snow, morning light"
NEGATIVE = "blurry, low quality"
SEED = 20261201  # the text conditioner's weights

# guidance_scale None: not passed (the guider's default 4.0, with the
# pipeline's default negative ""); CFG is on for g > 1.
CASES = [
    case("anima-default", "txt2img", PROMPT, steps=4, guidance_scale=None),
    case("anima-negative", "txt2img", PROMPT, steps=4, guidance_scale=3.0, negative_prompt=NEGATIVE),
    case("anima-nocfg", "txt2img", PROMPT, steps=3, guidance_scale=1.0),
    case("anima-batch2", "txt2img", PROMPT, width=64, height=64, steps=3, seed=13, guidance_scale=None,
         num_images_per_prompt=2),
    case("anima-seeds", "txt2img", PROMPT, steps=3, seeds=[11, 12], guidance_scale=5.0),
]


# ----------------------------------------------------------------------------- upstream import
def import_upstream(shared, transformers_src, diffusers_src):
    """The shared generator's import, plus the modular pipeline and the
    Anima modules (their package __init__s bare) with anima_refgen.py's
    shims."""
    up = shared.import_upstream(transformers_src, diffusers_src)
    hc = shared.hc
    import diffusers
    import diffusers.loaders as dl
    import torch.nn.functional as F
    hc._bare_packages("diffusers", os.path.dirname(diffusers.__file__),
                      ["modular_pipelines", "modular_pipelines.anima", "guiders", "models.condition_embedders"])
    hc.note("diffusers: package __init__s of modular_pipelines, modular_pipelines.anima, guiders, "
            "models.condition_embedders replaced by empty packages")
    for mixin in ("AnimaLoraLoaderMixin",):
        try:
            getattr(dl, mixin)
        except Exception:
            setattr(dl, mixin, type(mixin, (), {}))
            hc.note(f"diffusers.loaders.{mixin} -> empty mixin (LoRA loading; unused)")
    ar = importlib.import_module("anima_refgen")  # beside the shared generator
    up.tc = importlib.import_module("diffusers.models.transformers.transformer_cosmos")
    if not hasattr(up.tc, "transforms"):
        import types
        up.tc.transforms = types.SimpleNamespace(
            functional=types.SimpleNamespace(resize=ar._tv_resize),
            InterpolationMode=types.SimpleNamespace(NEAREST=types.SimpleNamespace(value="nearest")))
        hc.note("transformer_cosmos.transforms (torchvision, not installed) -> anima_refgen._tv_resize (the padding "
                "mask's nearest resize; the pipeline's mask is zeros)")
    F.scaled_dot_product_attention = ar._safe_sdpa
    hc.note("F.scaled_dot_product_attention -> anima_refgen._safe_sdpa (torch>=2.5: a query row whose every key is "
            "masked gets 0, not NaN: the empty negative prompt's Qwen keys)")
    up.cond = importlib.import_module("diffusers.models.condition_embedders.condition_embedder_anima")
    cfg = importlib.import_module("diffusers.guiders.classifier_free_guidance")
    sys.modules["diffusers.guiders"].ClassifierFreeGuidance = cfg.ClassifierFreeGuidance
    up.cfg = cfg
    up.qvae = importlib.import_module("diffusers.models.autoencoders.autoencoder_kl_qwenimage")
    up.mp = importlib.import_module("diffusers.modular_pipelines.anima.modular_pipeline")
    up.blocks = importlib.import_module("diffusers.modular_pipelines.anima.modular_blocks_anima")
    return up


# ----------------------------------------------------------------------------- folder
def fixture(shared, *parts):
    return os.path.join(shared.SHARED, *parts)


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def t5_tokenizer(folder):
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(folder, use_fast=False)


def conditioner_config(shared, pipe_dir):
    """AnimaTextConditioner sized to its neighbours: Qwen's width in, the
    transformer's text width out, the T5 tokenizer's vocabulary; the rest
    Anima's (6 layers would only cost time: 2)."""
    qwen = read_json(fixture(shared, "qwen3-tiny", "config.json"))
    dit = read_json(fixture(shared, "anima-tiny", "config.json"))
    return dict(source_dim=qwen["hidden_size"], target_dim=dit["text_embed_dim"], model_dim=dit["text_embed_dim"],
                num_layers=2, num_attention_heads=4, mlp_ratio=4.0,
                target_vocab_size=len(t5_tokenizer(os.path.join(pipe_dir, "t5_tokenizer"))),
                use_self_attention=True, use_layer_norm=False, min_sequence_length=512)


def build_folder(shared, up, root):
    """Writes root/pipe/ (all but the index); returns its path."""
    pipe_dir = os.path.join(root, "pipe")
    if os.path.isdir(pipe_dir):
        shutil.rmtree(pipe_dir)
    shared.write_json(os.path.join(pipe_dir, "scheduler", "scheduler_config.json"),
                      {"_class_name": "FlowMatchEulerDiscreteScheduler", "_diffusers_version": up.version,
                       "shift": 3.0})
    shared.copy_encoder("qwen3-tiny", os.path.join(pipe_dir, "text_encoder"), os.path.join(pipe_dir, "tokenizer"))
    shutil.copytree(fixture(shared, "t5-tiny", "tokenizer"), os.path.join(pipe_dir, "t5_tokenizer"))
    for sub, src in (("transformer", ("anima-tiny", "transformer")), ("vae", ("qwenimage-vae-tiny", "vae"))):
        os.makedirs(os.path.join(pipe_dir, sub))
        shutil.copyfile(fixture(shared, src[0], "config.json"), os.path.join(pipe_dir, sub, "config.json"))
        shutil.copyfile(fixture(shared, *src, "diffusion_pytorch_model.safetensors"),
                        os.path.join(pipe_dir, sub, "diffusion_pytorch_model.safetensors"))
    torch.manual_seed(SEED)
    cond = up.cond.AnimaTextConditioner(**conditioner_config(shared, pipe_dir)).eval()
    importlib.import_module("dit_common").init_random_bf16_(cond, SEED)
    shared.write_transformer(cond, os.path.join(pipe_dir, "text_conditioner"))
    return pipe_dir


def load_pipeline(shared, up, pipe_dir):
    """AnimaModularPipeline(AnimaAutoBlocks) over the folder's components,
    loaded back from disk; writes its modular_model_index.json."""
    from transformers import AutoTokenizer
    from transformers.models.qwen3 import modeling_qwen3 as mq
    tokenizer = AutoTokenizer.from_pretrained(os.path.join(pipe_dir, "tokenizer"), use_fast=False)
    encoder = mq.Qwen3Model.from_pretrained(os.path.join(pipe_dir, "text_encoder"), torch_dtype=torch.float32).eval()
    shared.check_loaded(encoder, os.path.join(pipe_dir, "text_encoder", "model.safetensors"))
    assert encoder.dtype == torch.float32
    pipe = up.mp.AnimaModularPipeline(blocks=up.blocks.AnimaAutoBlocks())
    pipe.update_components(
        text_encoder=encoder, tokenizer=tokenizer, t5_tokenizer=t5_tokenizer(os.path.join(pipe_dir, "t5_tokenizer")),
        text_conditioner=shared.load_diffusers_model(up.cond.AnimaTextConditioner,
                                                     os.path.join(pipe_dir, "text_conditioner")),
        transformer=shared.load_diffusers_model(up.tc.CosmosTransformer3DModel, os.path.join(pipe_dir, "transformer")),
        vae=shared.load_diffusers_model(up.qvae.AutoencoderKLQwenImage, os.path.join(pipe_dir, "vae")),
        scheduler=shared.load_scheduler(up, os.path.join(pipe_dir, "scheduler")))
    assert pipe.vae_scale_factor == 8, pipe.vae_scale_factor
    pipe.save_config(save_directory=pipe_dir)
    index_path = os.path.join(pipe_dir, "modular_model_index.json")
    index = read_json(index_path)
    for name, value in index.items():  # where save_pretrained points each saved component
        if isinstance(value, list) and len(value) == 3 and isinstance(value[2], dict) and value[0] is not None:
            value[2].update(pretrained_model_name_or_path=pipe_dir, subfolder=name)
    shared.write_json(index_path, index)
    pipe.set_progress_bar_config(disable=True)
    return pipe


# ----------------------------------------------------------------------------- one __call__
class Calls:
    """Wraps a module's forward to keep each call's keyword arguments."""

    def __init__(self, module):
        self.module, self.kwargs = module, []
        forward = module.forward

        def recorded(*args, **kwargs):
            assert not args, "the pipeline calls its transformer by keyword"
            self.kwargs.append({k: v.detach().clone() if torch.is_tensor(v) else v for k, v in kwargs.items()})
            return forward(**kwargs)

        module.forward = recorded

    def remove(self):
        del self.module.forward


def run_case(up, pipe, c):
    """(reference tensors, cases-file record) of one case."""
    g = 4.0 if c["guidance_scale"] is None else c["guidance_scale"]
    pipe.update_components(guider=up.cfg.ClassifierFreeGuidance(guidance_scale=g))
    cfg = g > 1.0
    n = modes.image_count(c)
    kwargs = dict(prompt=c["prompt"], height=c["height"], width=c["width"], num_inference_steps=c["steps"],
                  generator=modes.generators(c), num_images_per_prompt=n, output_type="pil")
    if c["negative_prompt"]:
        kwargs["negative_prompt"] = c["negative_prompt"]
    calls = Calls(pipe.transformer)
    try:
        with torch.no_grad():
            images = pipe(**kwargs, output="images")
    finally:
        calls.remove()
    u8 = [np.asarray(im) for im in images]
    assert len(u8) == n and all(im.dtype == np.uint8 and im.shape == (c["height"], c["width"], 3) for im in u8)

    per_step = 2 if cfg else 1
    assert len(calls.kwargs) == per_step * c["steps"], (c["name"], len(calls.kwargs))
    h, w = c["height"] // 8, c["width"] // 8
    gens = modes.generators(c)
    if isinstance(gens, list):
        noise = torch.cat([torch.randn((1, 16, 1, h, w), generator=gen, dtype=torch.float32) for gen in gens])
    else:
        noise = torch.randn((n, 16, 1, h, w), generator=gens, dtype=torch.float32)
    first = calls.kwargs[0]["hidden_states"]
    assert torch.equal(first, noise), f"{c['name']}: the first transformer input is not the documented draw"
    model_t = torch.stack([kw["timestep"][0] for kw in calls.kwargs[::per_step]])
    assert torch.equal(model_t, pipe.scheduler.timesteps[:c["steps"]] / 1000), c["name"]
    if cfg:  # cond, then uncond, at the same latents
        for i in range(1, len(calls.kwargs), 2):
            assert torch.equal(calls.kwargs[i]["hidden_states"], calls.kwargs[i - 1]["hidden_states"]), c["name"]
    r = {"initial_latents": first[:, :, 0], "prompt_embeds": calls.kwargs[0]["encoder_hidden_states"][0]}
    if cfg:
        r["negative_prompt_embeds"] = calls.kwargs[1]["encoder_hidden_states"][0]
    keys = ["image_u8"] if n == 1 else [f"image_u8.{k}" for k in range(n)]
    r.update(zip(keys, u8))
    stats = {"image_u8_mean": [round(float(im.mean()), 3) for im in u8],
             "prompt_embeds_rows": int(r["prompt_embeds"].shape[0])}
    record = dict(c, effective_guidance_scale=g, cfg=cfg,
                  negative_prompt_encoded=(c["negative_prompt"] if cfg else None),
                  image_keys=[f"{c['name']}.{k}" for k in keys], stats=stats)
    return r, record


# ----------------------------------------------------------------------------- files
def write_readme(shared, up, root, pipe_dir, cases, argv):
    rows = "\n".join(
        f"| `{c['name']}` | {json.dumps(c['negative_prompt'])} | {c['width']}x{c['height']} | {c['steps']} "
        f"| {json.dumps(c['seeds']) if c['seeds'] else c['seed']} | {modes.image_count(c)} "
        f"| {c['guidance_scale'] if c['guidance_scale'] is not None else '(4.0)'} | {'yes' if c['cfg'] else 'no'} |"
        for c in cases)
    cond = read_json(os.path.join(pipe_dir, "text_conditioner", "config.json"))
    shims = "\n".join(f"- {n}" for n in shared.hc.NOTES)
    text = f"""# AnimaModularPipeline end to end: upstream reference (tiny pipeline folder)

Generated by `/usr/bin/python3 tools/e2e/e2e_anima_refgen.py --transformers-src T --diffusers-src D --out-root OUT`
on CPU, torch {torch.__version__}, 1 thread, float32 throughout (BF16-stored weights upcast to fp32).
Upstream: diffusers {argv.diffusers_commit} (version {up.version}) `modular_pipelines/anima/`
(`AnimaModularPipeline(blocks=AnimaAutoBlocks())`, `pipe(prompt=..., output="images")`); transformers
{argv.transformers_commit} (v4.57.6) for the Qwen3 text encoder and both tokenizers (slow).

## Pipeline folder `pipe/`

- `modular_model_index.json`: the pipeline's own `save_config`, each component's spec pointing at its subfolder
- `scheduler/`: FlowMatchEulerDiscreteScheduler(shift=3.0)
- `text_encoder/` + `tokenizer/`: shared/fixtures/qwen3-tiny (`Qwen3Model.from_pretrained(..., torch_dtype=float32)`,
  Qwen2Tokenizer); `t5_tokenizer/`: shared/fixtures/t5-tiny/tokenizer (T5Tokenizer)
- `text_conditioner/`: a fresh `AnimaTextConditioner` {json.dumps({k: v for k, v in cond.items() if not k.startswith('_')})}
  (random BF16, dit_common.init_random_bf16_, seed {SEED})
- `transformer/`: shared/fixtures/anima-tiny's `CosmosTransformer3DModel` (text_embed_dim 32)
- `vae/`: shared/fixtures/qwenimage-vae-tiny (`AutoencoderKLQwenImage`, vae_scale_factor 8)

## Cases (`modes_cases.json`)

Prompt {json.dumps(PROMPT)}; guidance is the guider `ClassifierFreeGuidance(guidance_scale=g)` (uncond +
g(cond - uncond), on at g > 1, the negative "" when none is given); in parentheses: not passed (its default).

| case | negative | size | steps | seeds | images | guidance_scale | CFG |
|---|---|---|---|---|---|---|---|
{rows}

## modes_ref.safetensors

Per case `<case>.<key>`: `image_u8` ([H, W, 3] uint8, `output_type="pil"`; `image_u8.<k>` in a batch),
`initial_latents` ([N, 16, h, w], the transformer's first input: checked to be randn [N, 16, 1, h, w] of the one
generator, or [1, 16, 1, h, w] per generator of a list), `prompt_embeds` ([512, 32], the text conditioner's output the
transformer got), `negative_prompt_embeds` (with CFG).

## Shims (no model math changed)

{shims}

## Use

`/usr/bin/python3 tools/e2e/vs_upstream_generate.py --daemon build/release/server/diffusiond --refs OUT --family
anima` runs each case through a daemon over this folder (FP8 off) and compares the 8-bit images.
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
    ap.add_argument("--out-root", required=True, help="folder of anima-pipe/")
    ap.add_argument("--case", help="one case only")
    args = ap.parse_args()
    shared = modes.import_shared(args.shared_refgen)
    up = import_upstream(shared, args.transformers_src, args.diffusers_src)
    root = os.path.join(args.out_root, "anima-pipe")
    os.makedirs(root, exist_ok=True)
    pipe_dir = build_folder(shared, up, root)
    pipe = load_pipeline(shared, up, pipe_dir)
    results, cases = {}, []
    for c in CASES:
        if args.case and c["name"] != args.case:
            continue
        results[c["name"]], record = run_case(up, pipe, c)
        cases.append(record)
        print(c["name"], json.dumps(record["stats"]), flush=True)
    meta = {"generator": "e2e_anima_refgen.py", "diffusers_commit": args.diffusers_commit,
            "transformers_commit": args.transformers_commit}
    shared.save_ref(os.path.join(root, "modes_ref.safetensors"), results, meta)
    shared.write_json(os.path.join(root, "modes_cases.json"),
                      {"family": "anima", "pipeline_class": "AnimaModularPipeline", "pipeline_folder": "pipe",
                       "diffusers_version": up.version, "torch": torch.__version__, "cases": cases})
    write_readme(shared, up, root, pipe_dir, cases, args)


if __name__ == "__main__":
    main()
