#!/usr/bin/env python3
"""Upstream references for Generate on Qwen-Image and Krea 2: diffusers'
own QwenImagePipeline (with its img2img and inpainting pipelines) and
Krea2Pipeline __call__s on tiny pipeline folders in the real layout.

The shared e2e_pipe_refgen.py (--shared-refgen; default ../shared/refgen
beside the repository) does the upstream import (diffusers and transformers
from source trees, on torch 1.13, a PIL stand-in); this script adds the
Qwen modules to it and builds, per family, OUT/<family>-pipe/pipe/:
  qwenimage-pipe/pipe/  model_index.json (QwenImagePipeline), scheduler/
                        (Qwen-Image's: dynamic shift, shift_terminal 0.02),
                        text_encoder/ + tokenizer/ (shared/fixtures/
                        qwen25vl-tiny), transformer/ (a fresh random
                        QwenImageTransformer2DModel), vae/ (shared/fixtures/
                        qwenimage-vae-tiny: AutoencoderKLQwenImage)
  krea2-pipe/pipe/      model_index.json (Krea2Pipeline, with its
                        text_encoder_select_layers), scheduler/, text_encoder/
                        + tokenizer/ (shared/fixtures/qwen3vl-tiny),
                        transformer/ (a fresh random Krea2Transformer2DModel),
                        vae/ (the same Qwen-Image VAE)
The transformers have the shared fixtures' configs (qwenimage-tiny,
krea2-tiny), whose text widths are the towers' (24), with new weights drawn
as the shared generators draw them (dit_common.init_random_bf16_). The
pipelines are built from the folder's components, loaded back from disk,
and run float32 on the CPU, 1 thread, on the CASES below.

Each family folder gets what vs_upstream_generate.py reads without special
cases, in e2e_modes_refgen.py's format (see that script's docstring):
  init_80x48.png, init_64x64.png, mask_80x48.png   the image inputs
  modes_cases.json       {"family", "pipeline_class", "pipeline_folder":
                         "pipe", ..., "cases": [...]}: per case what a
                         client sends (mode, prompt, negative_prompt ("":
                         none sent), width, height, steps, seed (0 with
                         seeds) or seeds, guidance_scale (upstream's
                         number; null: not passed), true_cfg_scale (0: not
                         passed), strength (0: not passed), num_images_per_
                         prompt, image, mask), the effective_* values of
                         what was not passed (the __call__'s defaults), cfg
                         (whether upstream guided), mu, image_keys, stats
  modes_ref.safetensors  per case: image_u8 (or image_u8.<k> in a batch)
                         and intermediates, keys in README.md
  README.md              what was built, upstream commits, the cases
Every max_sequence_length is the __call__'s default (512).

What this checks, bit for bit, against recomputations in the draw order a
port must follow: the transformer's first input (txt2img: the noise;
img2img and inpainting: the VAE posterior sample, normalised, noised by
scale_noise), the scheduler's sigmas from mu, the first step's guidance
(Qwen-Image's true CFG with its norm rescale, Krea 2's cond + g(cond -
uncond)) and Euler update, inpainting's kept latents, and that every
prompt mask Qwen-Image hands its transformer is None.

Usage (Debian python3-torch 1.13, no pip; about 20 s on 2 cores):
  /usr/bin/python3 tools/e2e/e2e_qwen_refgen.py --transformers-src TRANSFORMERS_V4_57_SRC \\
      --diffusers-src DIFFUSERS_SRC --out-root OUT [--shared-refgen DIR] [--only qwenimage|krea2] [--case NAME]
"""
import importlib
import inspect
import json
import math
import os
import re
import shutil
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_modes_refgen as modes  # noqa: E402
from e2e_modes_refgen import case  # noqa: E402

DIFFUSERS_COMMIT = "58eb52c0803ea9af3abec60841c2a093bdf1f951"
TRANSFORMERS_COMMIT = "753d61104116eefc8ffc977327b441ee0c8d599f"
Q_PROMPT = "a red fox in the snow, morning light"
K_PROMPT = "a lighthouse at dusk, oil painting"
NEGATIVE = "blurry, low quality"

# guidance_scale None: not passed. Qwen-Image's CFG is true_cfg_scale (on
# with a negative prompt and a scale > 1; its __call__ default is 4.0), its
# guidance_scale only feeds guidance-distilled transformers. Krea 2's CFG is
# guidance_scale g (cond + g(cond - uncond), on at g > 0, default 4.5, the
# negative "" when none is given).
CASES = {
    "qwenimage": [
        case("qwenimage-nocfg", "txt2img", Q_PROMPT, guidance_scale=None),
        case("qwenimage-truecfg", "txt2img", Q_PROMPT, guidance_scale=None, negative_prompt=NEGATIVE,
             true_cfg_scale=4.0),
        # At 4.0 these tiny models' guidance barely changes the norm: dropping
        # the rescale moves the image by 1 level at 4.0, by 4 at 10.0.
        case("qwenimage-truecfg-s10", "txt2img", Q_PROMPT, guidance_scale=None, negative_prompt=NEGATIVE,
             true_cfg_scale=10.0),
        case("qwenimage-batch2", "txt2img", Q_PROMPT, width=64, height=64, seed=13, guidance_scale=None,
             num_images_per_prompt=2),
        case("qwenimage-seeds", "txt2img", Q_PROMPT, seeds=[11, 12], guidance_scale=None),
        case("qwenimage-i2i", "img2img", Q_PROMPT, steps=4, guidance_scale=None),  # strength: the default 0.6
        case("qwenimage-i2i-s05-cfg", "img2img", Q_PROMPT, steps=4, strength=0.5, guidance_scale=None,
             negative_prompt=NEGATIVE, true_cfg_scale=4.0),
        case("qwenimage-inpaint", "inpaint", Q_PROMPT, steps=4, guidance_scale=None),  # the default 0.6
        case("qwenimage-inpaint-s1", "inpaint", Q_PROMPT, steps=3, strength=1.0, guidance_scale=None),
    ],
    "krea2": [
        case("krea2-default", "txt2img", K_PROMPT, guidance_scale=None),  # 4.5, negative ""
        case("krea2-noguidance", "txt2img", K_PROMPT, guidance_scale=0.0),
        case("krea2-negative", "txt2img", K_PROMPT, guidance_scale=3.0, negative_prompt=NEGATIVE),
        case("krea2-batch2", "txt2img", K_PROMPT, width=64, height=64, seed=13, guidance_scale=None,
             num_images_per_prompt=2),
        case("krea2-seeds", "txt2img", K_PROMPT, seeds=[11, 12], guidance_scale=0.0),
    ],
}
FAMILIES = {
    "qwenimage": dict(
        pipeline_class="QwenImagePipeline", pipeline_module="qwenimage.pipeline_qwenimage",
        modes={"img2img": ("qwenimage.pipeline_qwenimage_img2img", "QwenImageImg2ImgPipeline"),
               "inpaint": ("qwenimage.pipeline_qwenimage_inpaint", "QwenImageInpaintPipeline")},
        encoder_fixture="qwen25vl-tiny", encoder_class="Qwen2_5_VLForConditionalGeneration",
        encoder_module="transformers.models.qwen2_5_vl.modeling_qwen2_5_vl",
        encoder_files=("config.json", "generation_config.json", "model.safetensors"),
        transformer_fixture="qwenimage-tiny", transformer_class="QwenImageTransformer2DModel",
        transformer_module="models.transformers.transformer_qwenimage", seed=20261103),
    "krea2": dict(
        pipeline_class="Krea2Pipeline", pipeline_module="krea2.pipeline_krea2", modes={},
        encoder_fixture="qwen3vl-tiny", encoder_class="Qwen3VLModel",
        encoder_module="transformers.models.qwen3_vl.modeling_qwen3_vl",
        encoder_files=("config.json", "model.safetensors"),
        transformer_fixture="krea2-tiny", transformer_class="Krea2Transformer2DModel",
        transformer_module="models.transformers.transformer_krea2", seed=20261104),
}
VAE_FIXTURE = "qwenimage-vae-tiny"


# ----------------------------------------------------------------------------- upstream import
def import_upstream(shared, transformers_src, diffusers_src):
    """The shared generator's import, plus the Qwen-Image / Krea 2 modules
    (their package __init__s bare, their LoRA mixins empty) and
    F.rms_norm, which Krea2RMSNorm calls (torch>=2.4)."""
    up = shared.import_upstream(transformers_src, diffusers_src)
    hc = shared.hc
    dc = importlib.import_module("dit_common")  # beside the shared generator, on the path import_shared set
    import diffusers
    import diffusers.loaders as dl
    import torch.nn.functional as F
    hc._bare_packages("diffusers", os.path.dirname(diffusers.__file__), ["pipelines.qwenimage", "pipelines.krea2"])
    hc.note("diffusers: package __init__s of pipelines.qwenimage, pipelines.krea2 replaced by empty packages")
    for mixin in ("QwenImageLoraLoaderMixin", "Krea2LoraLoaderMixin"):
        try:
            getattr(dl, mixin)
        except Exception:
            setattr(dl, mixin, type(mixin, (), {}))
            hc.note(f"diffusers.loaders.{mixin} -> empty mixin (LoRA loading; unused)")
    if not hasattr(F, "rms_norm"):
        F.rms_norm = dc.rms_norm
        hc.note("F.rms_norm -> dit_common.rms_norm (torch>=2.4 semantics: x * rsqrt(mean(x^2) + eps) * weight in the "
                "input dtype; Krea2RMSNorm passes float32)")
    up.dc = dc
    up.qvae = importlib.import_module("diffusers.models.autoencoders.autoencoder_kl_qwenimage")
    return up


def module_of(name):
    return importlib.import_module(name if name.startswith("transformers.") else "diffusers." + name)


# ----------------------------------------------------------------------------- folders
def fixture(shared, *parts):
    return os.path.join(shared.SHARED, *parts)


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def model_index(shared, up, family):
    spec = FAMILIES[family]
    index = {"_class_name": spec["pipeline_class"], "_diffusers_version": up.version,
             "scheduler": ["diffusers", "FlowMatchEulerDiscreteScheduler"],
             "text_encoder": ["transformers", spec["encoder_class"]], "tokenizer": ["transformers", "Qwen2Tokenizer"],
             "transformer": ["diffusers", spec["transformer_class"]], "vae": ["diffusers", "AutoencoderKLQwenImage"]}
    if family == "krea2":  # Krea2Pipeline.__init__ registers these three in its config
        taps = read_json(fixture(shared, "qwen3vl-tiny", "variant.json"))["select_layers"]
        index.update(is_distilled=False, patch_size=2, text_encoder_select_layers=taps)
    return index


def transformer_config(shared, family):
    cfg = read_json(fixture(shared, FAMILIES[family]["transformer_fixture"], "config.json"))
    return {k: v for k, v in cfg.items() if not k.startswith("_")}


def build_folder(shared, up, family, root):
    """Writes root/pipe/ in the diffusers layout; returns its path."""
    spec = FAMILIES[family]
    pipe_dir = os.path.join(root, "pipe")
    if os.path.isdir(pipe_dir):
        shutil.rmtree(pipe_dir)
    shared.write_json(os.path.join(pipe_dir, "model_index.json"), model_index(shared, up, family))
    sched = read_json(fixture(shared, spec["transformer_fixture"], "scheduler_config.json"))
    shared.write_json(os.path.join(pipe_dir, "scheduler", "scheduler_config.json"),
                      {"_class_name": "FlowMatchEulerDiscreteScheduler", "_diffusers_version": up.version,
                       **{k: v for k, v in sched.items() if not k.startswith("_")}})
    os.makedirs(os.path.join(pipe_dir, "text_encoder"))
    for name in spec["encoder_files"]:
        shutil.copyfile(fixture(shared, spec["encoder_fixture"], name), os.path.join(pipe_dir, "text_encoder", name))
    shutil.copytree(fixture(shared, spec["encoder_fixture"], "tokenizer"), os.path.join(pipe_dir, "tokenizer"))
    os.makedirs(os.path.join(pipe_dir, "vae"))
    shutil.copyfile(fixture(shared, VAE_FIXTURE, "config.json"), os.path.join(pipe_dir, "vae", "config.json"))
    shutil.copyfile(fixture(shared, VAE_FIXTURE, "vae", "diffusion_pytorch_model.safetensors"),
                    os.path.join(pipe_dir, "vae", "diffusion_pytorch_model.safetensors"))
    cls = getattr(module_of(spec["transformer_module"]), spec["transformer_class"])
    torch.manual_seed(spec["seed"])
    model = cls(**transformer_config(shared, family)).eval()
    up.dc.init_random_bf16_(model, spec["seed"])
    shared.write_transformer(model, os.path.join(pipe_dir, "transformer"))
    return pipe_dir


def check_encoder_weights(shared, model, path):
    """Every tensor of the checkpoint is in the model as from_pretrained
    maps its keys (the class's _checkpoint_conversion_mapping)."""
    mapping = getattr(model, "_checkpoint_conversion_mapping", None) or {}
    tensors, _ = shared.zr.st_load(path)
    state = model.state_dict()
    for key, value in tensors.items():
        name = key
        for pattern, replacement in mapping.items():
            name, n = re.subn(pattern, replacement, name)
            if n:
                break
        assert name in state, f"{path}: {key} ({name}) is not in the model"
        assert torch.equal(state[name].float(), torch.from_numpy(shared.zr.st_as_f32(*value))), f"{path}: {key}"


def load_pipelines(shared, up, family, pipe_dir):
    """{mode: pipeline} from the folder's components, loaded from disk."""
    from transformers import AutoTokenizer
    spec = FAMILIES[family]
    tokenizer = AutoTokenizer.from_pretrained(os.path.join(pipe_dir, "tokenizer"), use_fast=False)
    encoder_cls = getattr(module_of(spec["encoder_module"]), spec["encoder_class"])
    encoder = encoder_cls.from_pretrained(os.path.join(pipe_dir, "text_encoder"), dtype=torch.float32).eval()
    check_encoder_weights(shared, encoder, os.path.join(pipe_dir, "text_encoder", "model.safetensors"))
    assert encoder.dtype == torch.float32
    transformer = shared.load_diffusers_model(getattr(module_of(spec["transformer_module"]), spec["transformer_class"]),
                                              os.path.join(pipe_dir, "transformer"))
    vae = shared.load_diffusers_model(up.qvae.AutoencoderKLQwenImage, os.path.join(pipe_dir, "vae"))
    scheduler = shared.load_scheduler(up, os.path.join(pipe_dir, "scheduler"))
    index = read_json(os.path.join(pipe_dir, "model_index.json"))
    config = {k: index[k] for k in ("text_encoder_select_layers", "is_distilled", "patch_size") if k in index}
    width, t = encoder.config.text_config.hidden_size, transformer.config
    fits = (t.joint_attention_dim == width if family == "qwenimage" else
            t.text_hidden_dim == width and t.num_text_layers == len(config["text_encoder_select_layers"]))
    assert fits, f"{family}: the transformer's text input does not fit the {width}-wide text tower"
    pipe_cls = getattr(module_of("pipelines." + spec["pipeline_module"]), spec["pipeline_class"])
    txt2img = pipe_cls(scheduler=scheduler, vae=vae, text_encoder=encoder, tokenizer=tokenizer,
                       transformer=transformer, **config)
    registered = {k: (list(v) if isinstance(v, tuple) else v) for k, v in txt2img.config.items()
                  if not k.startswith("_")}
    expected = {k: v for k, v in index.items() if not k.startswith("_")}
    assert registered == expected, f"model_index.json {expected} is not what the pipeline registers: {registered}"
    pipes = {"txt2img": txt2img}
    for mode, (module, cls) in spec["modes"].items():
        pipes[mode] = getattr(module_of("pipelines." + module), cls)(**txt2img.components)
    for pipe in pipes.values():
        pipe.set_progress_bar_config(disable=True)
    return pipes


# ----------------------------------------------------------------------------- one __call__
class Calls:
    """Wraps a module's forward to keep each call's keyword arguments and
    its first output."""

    def __init__(self, module):
        self.module, self.kwargs, self.outputs = module, [], []
        forward = module.forward

        def recorded(*args, **kwargs):
            assert not args, "the pipelines call their transformer by keyword"
            out = forward(**kwargs)
            self.kwargs.append({k: v.detach().clone() if torch.is_tensor(v) else v for k, v in kwargs.items()})
            self.outputs.append(out[0].detach().clone())
            return out

        module.forward = recorded

    def remove(self):
        del self.module.forward


def effective(family, pipe, c):
    """What upstream ran with: the __call__'s defaults for what the case
    does not pass, and whether it guided."""
    defaults = {k: p.default for k, p in inspect.signature(type(pipe).__call__).parameters.items()}
    e = {"guidance_scale": defaults["guidance_scale"] if c["guidance_scale"] is None else c["guidance_scale"],
         "true_cfg_scale": c["true_cfg_scale"] or defaults.get("true_cfg_scale"),  # Krea 2 has none
         "strength": (c["strength"] or defaults["strength"]) if c["mode"] != "txt2img" else 0.0}
    if family == "qwenimage":  # do_true_cfg = true_cfg_scale > 1 and has_neg_prompt
        e["cfg"] = e["true_cfg_scale"] > 1 and bool(c["negative_prompt"])
    else:  # do_classifier_free_guidance = guidance_scale > 0; the negative defaults to ""
        e["cfg"] = e["guidance_scale"] > 0
    e["negative_prompt_encoded"] = c["negative_prompt"] if e["cfg"] else None
    return e


def call_upstream(pipe, c, inputs):
    """Runs one case; returns (uint8 images, the transformer's calls, the
    packed latents after each step)."""
    kwargs = dict(prompt=c["prompt"], height=c["height"], width=c["width"], num_inference_steps=c["steps"],
                  generator=modes.generators(c), num_images_per_prompt=modes.image_count(c), output_type="pil",
                  return_dict=False)
    for name in ("negative_prompt", "true_cfg_scale", "strength"):
        if c[name]:
            kwargs[name] = c[name]
    if c["guidance_scale"] is not None:
        kwargs["guidance_scale"] = c["guidance_scale"]
    if c["image"]:
        kwargs["image"] = modes.pixels_as_upstream_gets_them(inputs[c["image"]])
    if c["mask"]:
        kwargs["mask_image"] = modes.pixels_as_upstream_gets_them(inputs[c["mask"]])
    steps = []

    def on_step(p, i, t, kw):
        steps.append(kw["latents"].detach().clone())
        return {}

    calls = Calls(pipe.transformer)
    try:
        with torch.no_grad():
            images = pipe(callback_on_step_end=on_step, **kwargs)[0]
    finally:
        calls.remove()
    u8 = [np.asarray(im) for im in images]
    assert len(u8) == modes.image_count(c)
    assert all(im.dtype == np.uint8 and im.shape == (c["height"], c["width"], 3) for im in u8)
    return u8, calls, steps


def unpack(family, pipe, c, packed):
    """Packed [N, S, 64] -> [N, 16, h, w] (the pipeline's own unpacking,
    then its single frame)."""
    if family == "qwenimage":
        latents = pipe._unpack_latents(packed, c["height"], c["width"], pipe.vae_scale_factor)
    else:
        latents = pipe._unpack_latents(packed, c["height"], c["width"])
    return latents[:, :, 0]


def vae_normalisation(vae):
    """(latents_mean, 1 / latents_std) as [1, z, 1, 1, 1], as the pipelines
    build them."""
    cfg = vae.config
    mean = torch.tensor(cfg.latents_mean).view(1, cfg.z_dim, 1, 1, 1)
    return mean, 1.0 / torch.tensor(cfg.latents_std).view(1, cfg.z_dim, 1, 1, 1)


def mu_of(family, pipe, c):
    """The schedule's shift: calculate_shift over the packed token count
    with the scheduler config's numbers (Krea 2's distilled: 1.15)."""
    if family == "krea2" and pipe.config.is_distilled:
        return 1.15
    cfg = pipe.scheduler.config
    calculate_shift = sys.modules[type(pipe).__module__].calculate_shift
    return calculate_shift((c["height"] // 16) * (c["width"] // 16), cfg["base_image_seq_len"],
                           cfg["max_image_seq_len"], cfg["base_shift"], cfg["max_shift"])


def check_sigmas(pipe, c, mu):
    """The scheduler's sigmas, recomputed: linspace(1, 1/N, N) in float64
    rounded to float32, the exponential shift e^mu / (e^mu + 1/s - 1) in
    float32, then shift_terminal's stretch, then a final 0."""
    n = c["steps"]
    sigmas = np.linspace(1.0, 1 / n, n).astype(np.float32)
    sigmas = math.exp(mu) / (math.exp(mu) + (1 / sigmas - 1) ** 1.0)
    terminal = pipe.scheduler.config.shift_terminal
    if terminal:
        one_minus = 1 - sigmas
        sigmas = 1 - one_minus / (one_minus[-1] / (1 - terminal))
    sigmas = torch.cat([torch.from_numpy(sigmas).float(), torch.zeros(1)])
    assert torch.equal(sigmas, pipe.scheduler.sigmas), (c["name"], sigmas, pipe.scheduler.sigmas)


def check_initial_latents(pipe, c, inputs, begin, first):
    """Recomputes the transformer's first input, unpacked [N, 16, h, w], in
    the draw order a port must follow, and asserts it is bit-identical;
    returns the intermediates for the reference file.

    txt2img: noise [N, 16, h, w] in one randn of the one generator, or
    [1, 16, h, w] from each generator of a list (Qwen-Image draws it as
    [N, 1, 16, h, w]: the same numbers). img2img and inpainting first draw
    the VAE posterior's eps [1, 16, 1, h, w] from the (first) generator for
    the one init image [1, 3, 1, H, W] (one frame), normalise it as
    (sample - latents_mean) * (1 / latents_std), then draw the noise, and
    start from sigma * noise + (1 - sigma) * image_latents at the first
    step strength leaves. Inpainting then encodes the masked image with a
    third draw, which its 64-channel transformer never reads."""
    h, w = 2 * (c["height"] // 16), 2 * (c["width"] // 16)
    n, gens = modes.image_count(c), modes.generators(c)
    out = {}
    if c["mode"] != "txt2img":
        image = 2.0 * modes.pixels_as_upstream_gets_them(inputs[c["image"]]) - 1.0
        with torch.no_grad():
            dist = pipe.vae.encode(image.unsqueeze(2)).latent_dist
        eps = torch.randn(dist.mean.shape, generator=gens[0] if isinstance(gens, list) else gens, dtype=torch.float32)
        mean, inv_std = vae_normalisation(pipe.vae)
        out["image_latents"] = ((dist.mean + dist.std * eps - mean) * inv_std)[:, :, 0]
    if isinstance(gens, list):
        noise = torch.cat([torch.randn((1, 16, h, w), generator=g, dtype=torch.float32) for g in gens])
    else:
        noise = torch.randn((n, 16, h, w), generator=gens, dtype=torch.float32)
    expected = noise
    if c["mode"] != "txt2img":
        assert pipe.scheduler.begin_index == begin, (pipe.scheduler.begin_index, begin)
        sigma = pipe.scheduler.sigmas[begin]
        expected = sigma * noise + (1.0 - sigma) * out["image_latents"]
        out["noise"] = noise
    assert torch.equal(first, expected), f"{c['name']}: the first transformer input is not the documented draw"
    if c["mode"] == "inpaint":
        mask = torch.where(modes.pixels_as_upstream_gets_them(inputs[c["mask"]]) < 0.5, 0.0, 1.0)
        out["mask_latents"] = torch.nn.functional.interpolate(mask, size=(h, w), mode="nearest")
    return out


def check_first_step(family, pipe, c, e, calls, steps, begin):
    """The first step from the recorded transformer outputs: guidance
    (Qwen-Image: comb = uncond + s(cond - uncond), rescaled per packed token
    to the cond output's L2 norm over its 64 channels; Krea 2: cond +
    g(cond - uncond)), then Euler x + (sigma[i+1] - sigma[i]) * v."""
    cond = calls.outputs[0]
    if not e["cfg"]:
        velocity = cond
    elif family == "qwenimage":
        uncond = calls.outputs[1]
        comb = uncond + e["true_cfg_scale"] * (cond - uncond)
        velocity = comb * (torch.norm(cond, dim=-1, keepdim=True) / torch.norm(comb, dim=-1, keepdim=True))
    else:
        velocity = cond + e["guidance_scale"] * (cond - calls.outputs[1])
    sigmas = pipe.scheduler.sigmas
    expected = calls.kwargs[0]["hidden_states"] + (sigmas[begin + 1] - sigmas[begin]) * velocity
    if c["mode"] != "inpaint":  # inpainting's step ends with the blend (check_inpaint_keeps)
        assert torch.equal(steps[0], expected), f"{c['name']}: the first step is not the documented update"


def check_calls(family, pipe, c, e, calls, steps, begin):
    """Call count and order (cond, then uncond, per step), the timesteps
    and the text conditioning; returns the text intermediates."""
    per_step, n = (2 if e["cfg"] else 1), modes.image_count(c)
    assert len(calls.kwargs) == per_step * len(steps) and len(steps) == c["steps"] - begin, c["name"]
    out = {}
    mask_key = "encoder_hidden_states_mask" if family == "qwenimage" else "encoder_attention_mask"
    for prefix, k in (("prompt", 0), ("negative_prompt", 1))[:per_step]:
        kw = calls.kwargs[k]
        embeds, mask = kw["encoder_hidden_states"], kw[mask_key]
        assert all(torch.equal(embeds[i], embeds[0]) for i in range(n))  # repeated per image
        out[f"{prefix}_embeds"] = embeds[0]
        if family == "qwenimage":  # one prompt's mask is all ones, which encode_prompt turns into None
            assert mask is None, f"{c['name']}: Qwen-Image passed a prompt mask"
        else:
            out[f"{prefix}_embeds_mask"] = mask[0].numpy().astype(np.int64)
    assert per_step == 1 or all(torch.equal(calls.kwargs[i]["hidden_states"], calls.kwargs[i - 1]["hidden_states"])
                                for i in range(1, len(calls.kwargs), 2))  # both passes see the same latents
    model_t = torch.stack([kw["timestep"][0] for kw in calls.kwargs[::per_step]])
    assert torch.equal(model_t, pipe.scheduler.timesteps[begin:begin + len(steps)] / 1000)
    out["model_timesteps"] = model_t
    return out


def decode_checks(pipe, u8, final):
    """Decodes the final latents as the pipeline does (latents / (1 /
    latents_std) + latents_mean, one frame, postprocess, (x * 255).round())
    and asserts the images; returns the largest level difference when the
    de-normalisation is written latents * latents_std + latents_mean."""
    mean, inv_std = vae_normalisation(pipe.vae)
    std = torch.tensor(pipe.vae.config.latents_std).view(1, -1, 1, 1, 1)
    images = []
    with torch.no_grad():
        for latents in (final[:, :, None] / inv_std + mean, final[:, :, None] * std + mean):
            decoded = pipe.vae.decode(latents, return_dict=False)[0]
            assert decoded.shape[2] == 1
            images.append((pipe.image_processor.postprocess(decoded[:, :, 0], output_type="np") * 255).round()
                          .astype(np.uint8))
    assert all(np.array_equal(a, b) for a, b in zip(images[0], u8))
    return int(np.abs(images[0].astype(np.int32) - images[1].astype(np.int32)).max())


def run_case(family, pipe, c, inputs):
    """(reference tensors, cases-file record) of one case."""
    e = effective(family, pipe, c)
    mu = mu_of(family, pipe, c)
    u8, calls, steps = call_upstream(pipe, c, inputs)
    check_sigmas(pipe, c, mu)
    begin = modes.t_start(c["steps"], e["strength"]) if c["mode"] != "txt2img" else 0
    first = unpack(family, pipe, c, calls.kwargs[0]["hidden_states"])
    final = unpack(family, pipe, c, steps[-1])
    r = {"initial_latents": first, "final_latents": final, "sigmas": pipe.scheduler.sigmas.float()}
    r.update(check_calls(family, pipe, c, e, calls, steps, begin))
    r.update(check_initial_latents(pipe, c, inputs, begin, first))
    check_first_step(family, pipe, c, e, calls, steps, begin)
    if c["mode"] == "inpaint":
        modes.check_inpaint_keeps(c, r, final)
    levels = decode_checks(pipe, u8, final)
    keys = ["image_u8"] if len(u8) == 1 else [f"image_u8.{k}" for k in range(len(u8))]
    r.update(zip(keys, u8))
    model_t, sigmas = r["model_timesteps"], r["sigmas"][begin:begin + len(steps)]
    stats = {"image_u8_mean": [round(float(im.mean()), 3) for im in u8],
             "final_latents_absmax": round(float(final.abs().max()), 4),
             "model_timestep_minus_sigma_max": float((model_t - sigmas).abs().max()),
             "max_levels_if_latents_times_std": levels}
    record = dict(c, effective_guidance_scale=e["guidance_scale"], effective_true_cfg_scale=e["true_cfg_scale"],
                  effective_strength=e["strength"], cfg=e["cfg"], negative_prompt_encoded=e["negative_prompt_encoded"],
                  mu=mu, first_step=begin, steps_run=len(steps), image_keys=[f"{c['name']}.{k}" for k in keys],
                  stats=stats)
    return r, record


# ----------------------------------------------------------------------------- files
def run_family(shared, up, family, root, only_case, argv):
    os.makedirs(root, exist_ok=True)
    pipe_dir = build_folder(shared, up, family, root)
    pipes = load_pipelines(shared, up, family, pipe_dir)
    inputs = modes.write_inputs(root) if any(c["image"] for c in CASES[family]) else {}
    results, cases = {}, []
    for c in CASES[family]:
        if only_case and c["name"] != only_case:
            continue
        results[c["name"]], record = run_case(family, pipes[c["mode"]], c, inputs)
        cases.append(record)
        print(c["name"], json.dumps(record["stats"]), flush=True)
    meta = {"generator": "e2e_qwen_refgen.py", "diffusers_commit": argv.diffusers_commit,
            "transformers_commit": argv.transformers_commit}
    shapes = shared.save_ref(os.path.join(root, "modes_ref.safetensors"), results, meta)
    shared.write_json(os.path.join(root, "modes_cases.json"),
                      {"family": family, "pipeline_class": FAMILIES[family]["pipeline_class"],
                       "pipeline_folder": "pipe", "diffusers_version": up.version, "torch": torch.__version__,
                       "cases": cases})
    write_readme(shared, up, family, root, cases, shapes, argv)


def pipe_description(shared, up, family):
    spec = FAMILIES[family]
    index = model_index(shared, up, family)
    extra = {k: index[k] for k in ("is_distilled", "patch_size", "text_encoder_select_layers") if k in index}
    sched = read_json(os.path.join(shared.SHARED, spec["transformer_fixture"], "scheduler_config.json"))
    sched = {k: v for k, v in sched.items() if not k.startswith("_")}
    return "\n".join([
        f"- `model_index.json`: `{spec['pipeline_class']}`, components as upstream registers them"
        + (f"; pipeline config {json.dumps(extra)}" if extra else ""),
        f"- `scheduler/`: FlowMatchEulerDiscreteScheduler {json.dumps(sched)} (shared/fixtures/"
        f"{spec['transformer_fixture']}/scheduler_config.json)",
        f"- `text_encoder/`: shared/fixtures/{spec['encoder_fixture']} ({', '.join(spec['encoder_files'])}), loaded "
        f"with `{spec['encoder_class']}.from_pretrained(..., dtype=float32)`; `tokenizer/`: its tokenizer "
        "(Qwen2Tokenizer, slow, `use_fast=False`)",
        f"- `transformer/`: a fresh `{spec['transformer_class']}` {json.dumps(transformer_config(shared, family))} "
        f"(random BF16, dit_common.init_random_bf16_, seed {spec['seed']}; config of shared/fixtures/"
        f"{spec['transformer_fixture']})",
        f"- `vae/`: shared/fixtures/{VAE_FIXTURE} (`AutoencoderKLQwenImage`, z_dim 16, latents_mean/latents_std, "
        "temperal_downsample of 3 levels: vae_scale_factor 8)"])


def case_rows(cases):
    def passed(v, effective, unset):
        return f"({effective})" if v == unset else f"{v}"

    rows = []
    for c in cases:
        seeds = json.dumps(c["seeds"]) if c["seeds"] else str(c["seed"])
        cfg = ("yes" if c["negative_prompt"] else "yes, negative \"\"") if c["cfg"] else "no"
        true_cfg = c["effective_true_cfg_scale"] is not None  # Krea 2's __call__ has none
        rows.append(f"| `{c['name']}` | {c['mode']} | {json.dumps(c['negative_prompt'])} | {c['width']}x{c['height']} "
                    f"| {c['steps']} ({c['steps_run']} run) | {seeds} | {modes.image_count(c)} "
                    f"| {passed(c['guidance_scale'], c['effective_guidance_scale'], None)} "
                    f"| {passed(c['true_cfg_scale'], c['effective_true_cfg_scale'], 0.0) if true_cfg else '—'} "
                    f"| {passed(c['strength'], c['effective_strength'], 0.0) if c['mode'] != 'txt2img' else ''} "
                    f"| {cfg} | {c['mu']:.6f} |")
    return "\n".join(rows)


KEY_DOC = {
    "image_u8": "[H, W, 3] uint8, output_type=\"pil\" (upstream's (x * 255).round()); `image_u8.<k>`: image k of "
                "a batch",
    "initial_latents": "[N, 16, h, w] the transformer's first input, unpacked",
    "final_latents": "[N, 16, h, w] after the last step, unpacked (before the VAE de-normalisation)",
    "sigmas": "[steps + 1] the scheduler's sigmas (before truncation by strength)",
    "model_timesteps": "[steps run] the timestep handed to the transformer: scheduler.timesteps[i] / 1000 in float32",
    "prompt_embeds": "the transformer's encoder_hidden_states of image 0: Qwen-Image [L, 24]; Krea 2 [512, 3, 24]",
    "prompt_embeds_mask": "Krea 2: its encoder_attention_mask [512] (1 valid; padding in the middle)",
    "negative_prompt_embeds": "with CFG: the second call's (Krea 2 without a negative prompt: the encoded \"\")",
    "negative_prompt_embeds_mask": "Krea 2 with CFG",
    "image_latents": "img2img, inpainting: [1, 16, h, w] the init image's posterior sample, normalised",
    "noise": "img2img, inpainting: [N, 16, h, w] the noise drawn after it",
    "mask_latents": "inpainting: [1, 1, h, w] the binarised mask at latent size (nearest)",
}


def write_readme(shared, up, family, root, cases, shapes, argv):
    spec = FAMILIES[family]
    files = [f"pipelines/{spec['pipeline_module'].replace('.', '/')}.py"] + [
        f"pipelines/{m.replace('.', '/')}.py" for m, _ in spec["modes"].values()]
    keys = "\n".join(f"| `{k}` | {KEY_DOC[k.split('.', 1)[1].split('.')[0]]} |" for k in sorted(
        {"<case>." + name.split(".", 1)[1].split(".")[0] for name in shapes}))
    guidance = ("Qwen-Image's classifier-free guidance is `true_cfg_scale` s: on when a `negative_prompt` is given and "
                "s > 1 (the __call__'s default s is 4.0), comb = uncond + s(cond - uncond) rescaled per packed token "
                "to the cond output's norm; its `guidance_scale` only feeds guidance-distilled transformers (this one "
                "is not: guidance_embeds false) and is never passed here."
                if family == "qwenimage" else
                "Krea 2's classifier-free guidance is `guidance_scale` g: cond + g(cond - uncond), on at g > 0 (the "
                "__call__'s default 4.5), the negative prompt \"\" when none is given; there is no true_cfg_scale.")
    shims = "\n".join(f"- {n}" for n in shared.hc.NOTES)
    text = f"""# {spec['pipeline_class']} end to end: upstream reference (tiny pipeline folder)

Generated by `/usr/bin/python3 tools/e2e/e2e_qwen_refgen.py --transformers-src T --diffusers-src D --out-root OUT`
on CPU, torch {torch.__version__}, 1 thread, float32 throughout (BF16-stored weights upcast to fp32).
Upstream: diffusers {argv.diffusers_commit} (version {up.version}) {', '.join(f'`{f}`' for f in files)}
`__call__`; transformers {argv.transformers_commit} (v4.57.6) for the text encoder and tokenizer. The pipelines are
constructed from the components of `pipe/` loaded back from its folders (transformers models with
`from_pretrained(..., dtype=float32)`, diffusers models with `from_config` + `load_state_dict` from our own
safetensors reader), then called with `prompt=` (the pipeline encodes it itself),
`generator=torch.Generator("cpu").manual_seed(seed)` (or a list of them for `seeds`), `output_type="pil"`.

## Pipeline folder `pipe/`

{pipe_description(shared, up, family)}

## Cases (`modes_cases.json`)

Each case is one upstream `__call__` as a client asks for it (e2e_modes_refgen.py's format). {guidance}
A value in parentheses was not passed: it is the `__call__`'s default. Every `max_sequence_length` is the
default, 512. Prompt: {json.dumps(cases[0]['prompt'] if cases else '')}.

| case | mode | negative | size | steps | seeds | images | guidance_scale | true_cfg_scale | strength | CFG | mu |
|---|---|---|---|---|---|---|---|---|---|---|---|
{case_rows(cases)}

## Draws and checks

Recomputed here and asserted bit-identical: the transformer's first input (txt2img: `torch.randn` of the one
generator for all N images, [N, 16, h, w], or [1, 16, h, w] per generator of a list; img2img and inpainting: first
the VAE posterior's eps [1, 16, 1, h, w] from the first generator for the one init image, normalised
(sample - latents_mean) * (1 / latents_std), then the noise, then sigma * noise + (1 - sigma) * image_latents at the
first step `strength` leaves), the scheduler's sigmas from mu, the first step's guidance and Euler update, the
timesteps the transformer got, inpainting's kept latents, the images from the final latents (de-normalised as
latents / (1 / latents_std) + latents_mean, the VAE's one frame, `(x * 0.5 + 0.5).clamp(0, 1)`,
`(x * 255).round()`). stats.max_levels_if_latents_times_std is how far the images move when the de-normalisation is
written latents * latents_std + latents_mean instead.

## modes_ref.safetensors

Per case `<case>.<key>` (float32 unless said):

| key | meaning |
|---|---|
{keys}

## Shims (no model math changed)

{shims}

## Use

`/usr/bin/python3 tools/e2e/vs_upstream_generate.py --daemon build/release/server/diffusiond --refs OUT --family
{family}` runs each case through a daemon over this folder (FP8 off) and compares the 8-bit images.

## Notes

- fp32 results depend on the CPU's BLAS kernels at the 1e-6 level; reruns are bit-identical per machine only.
"""
    with open(os.path.join(root, "README.md"), "w", encoding="utf-8") as f:
        f.write(text)


def main():
    modes.family_refgen_main(__doc__, CASES, import_upstream, run_family, DIFFUSERS_COMMIT, TRANSFORMERS_COMMIT)


if __name__ == "__main__":
    main()
