#!/usr/bin/python3
"""Writes an AutoencoderKL (FLUX.1 / Z-Image VAE layout) reference fixture by running upstream diffusers.

  vae_refgen.py --variant b --out DIR --diffusers DIFFUSERS_CHECKOUT/src [--commit SHA]

Layout (what tests/unit/models/vae_parity_test.cc reads): config.json, variant.json,
vae/diffusion_pytorch_model.safetensors (BF16, diffusers keys), single_file.safetensors (BF16, ldm keys
as in BFL's ae.safetensors), io.safetensors (decode.*, encode.*, tiled.*), stats.json (tile sizes,
key lists, measurements) and README.md. Weights are random (seeded), rounded to BF16; outputs are
upstream's AutoencoderKL and VaeImageProcessor in float32, with the latent scaling the FLUX / Z-Image
pipelines apply around vae.decode.
"""

import argparse
import copy
import json
import os
import re
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refgen_common as rc  # noqa: E402
import upstream_env  # noqa: E402

FLUX_VAE = dict(in_channels=3, out_channels=3, latent_channels=16, act_fn="silu", sample_size=1024,
                scaling_factor=0.3611, shift_factor=0.1159, use_quant_conv=False, use_post_quant_conv=False,
                mid_block_add_attention=True, force_upcast=True)
VARIANTS = {
    "a": dict(seed=20250317, lat_hw=[6, 6], tile=dict(sample=32, latent=4),
              config=dict(block_out_channels=[16, 24, 48, 48], layers_per_block=1, norm_num_groups=8)),
    # Other widths (last two differ, so every up block has a shortcut conv), two resnets per block,
    # four groups, a non-square latent.
    "b": dict(seed=20260129, lat_hw=[6, 10], tile=dict(sample=32, latent=4),
              config=dict(block_out_channels=[12, 20, 32, 40], layers_per_block=2, norm_num_groups=4)),
    # Three blocks (latent = image / 4), SD3-style latent scaling and shift, a portrait latent.
    "c": dict(seed=20260412, lat_hw=[6, 4], tile=dict(sample=16, latent=4),
              config=dict(block_out_channels=[8, 16, 24], layers_per_block=1, norm_num_groups=8,
                          scaling_factor=1.5305, shift_factor=0.0609)),
}


def to_ldm(state, num_blocks):
    """diffusers AutoencoderKL keys -> the original ldm keys (attention weights as 1x1 convs)."""
    out = {}
    for key, t in state.items():
        k = key.replace("conv_norm_out", "norm_out").replace("conv_shortcut", "nin_shortcut")
        k = re.sub(r"down_blocks\.(\d+)\.resnets\.", r"down.\1.block.", k)
        k = re.sub(r"down_blocks\.(\d+)\.downsamplers\.0\.", r"down.\1.downsample.", k)
        k = re.sub(r"up_blocks\.(\d+)\.resnets\.(\d+)\.",
                   lambda m: f"up.{num_blocks - 1 - int(m.group(1))}.block.{m.group(2)}.", k)
        k = re.sub(r"up_blocks\.(\d+)\.upsamplers\.0\.",
                   lambda m: f"up.{num_blocks - 1 - int(m.group(1))}.upsample.", k)
        k = k.replace("mid_block.resnets.0.", "mid.block_1.").replace("mid_block.resnets.1.", "mid.block_2.")
        m = re.match(r"(.*)mid_block\.attentions\.0\.(group_norm|to_q|to_k|to_v|to_out\.0)\.(weight|bias)$", k)
        if m:
            part = {"group_norm": "norm", "to_q": "q", "to_k": "k", "to_v": "v", "to_out.0": "proj_out"}[m.group(2)]
            k = f"{m.group(1)}mid.attn_1.{part}.{m.group(3)}"
            if part != "norm" and m.group(3) == "weight":
                t = t[:, :, None, None]
        out[k] = t.contiguous()
    return out


def dbg_hooks(vae, io):
    handles = []

    def keep(name):
        return lambda mod, inp, out: io.__setitem__(name, (out[0] if isinstance(out, tuple) else out).detach().clone())
    d, e = vae.decoder, vae.encoder
    handles += [d.conv_in.register_forward_hook(keep("decode.dbg.conv_in")),
                d.mid_block.register_forward_hook(keep("decode.dbg.mid_block")),
                d.conv_norm_out.register_forward_hook(keep("decode.dbg.conv_norm_out")),
                e.mid_block.register_forward_hook(keep("encode.dbg.mid_block"))]
    handles += [b.register_forward_hook(keep(f"decode.dbg.up_blocks.{i}")) for i, b in enumerate(d.up_blocks)]
    handles += [b.register_forward_hook(keep(f"encode.dbg.down_blocks.{i}")) for i, b in enumerate(e.down_blocks)]
    return handles


def run(diffusers, vae, io, latents, image, eps_seed, dtype=torch.float32):
    """Decode as the FLUX / Z-Image pipelines do after the loop, encode as img2img does."""
    m = vae.to(dtype)
    out = {}
    with torch.no_grad():
        vae_in = latents.to(dtype) / m.config.scaling_factor + m.config.shift_factor
        out["vae_in"] = vae_in
        out["image"] = m.decode(vae_in, return_dict=False)[0]
        dist = m.encode(image.to(dtype)).latent_dist
        out.update(moments=dist.parameters, mean=dist.mean, logvar=dist.logvar, std=dist.std)
        out["sample"] = dist.sample(generator=torch.Generator().manual_seed(eps_seed))
        out["latents_mode"] = (dist.mode() - m.config.shift_factor) * m.config.scaling_factor
        out["latents"] = (out["sample"] - m.config.shift_factor) * m.config.scaling_factor
    vae.to(torch.float32)
    return {k: v.to(torch.float32) for k, v in out.items()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--variant", choices=sorted(VARIANTS), required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--diffusers", required=True, help="a diffusers checkout's src/ folder")
    p.add_argument("--commit", help="the diffusers commit, when --diffusers is not a git checkout")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    upstream_env.limit_openblas_threads(1)
    diffusers = upstream_env.import_diffusers(args.diffusers)
    # numpy_to_pil's last step; the fixture keeps its uint8 array.
    sys.modules["PIL.Image"].fromarray = lambda array, mode=None: array
    upstream_env.SHIMS.append("PIL.Image.fromarray -> returns the uint8 array (numpy_to_pil's rounding is upstream's)")
    from diffusers.image_processor import VaeImageProcessor
    v = dict(VARIANTS[args.variant], name=args.variant)
    (lat_h, lat_w), tile = v["lat_hw"], v["tile"]
    os.makedirs(os.path.join(args.out, "vae"), exist_ok=True)
    stats = rc.provenance(args.diffusers, upstream_env.SHIMS, args.commit)

    n_blocks = len(v["config"]["block_out_channels"])
    vae = diffusers.AutoencoderKL(**dict(FLUX_VAE, down_block_types=["DownEncoderBlock2D"] * n_blocks,
                                         up_block_types=["UpDecoderBlock2D"] * n_blocks, **v["config"])).eval()
    rc.randomize_bf16(vae, torch.Generator().manual_seed(v["seed"]), rule="conv")
    state = {k: t.detach().clone() for k, t in vae.state_dict().items()}
    config = json.loads(vae.to_json_string())
    rc.write_json(os.path.join(args.out, "config.json"), config)
    rc.write_json(os.path.join(args.out, "variant.json"), v)
    rc.write_weights(os.path.join(args.out, "vae", "diffusion_pytorch_model.safetensors"), state)
    ldm = to_ldm(state, n_blocks)
    rc.write_weights(os.path.join(args.out, "single_file.safetensors"), ldm)
    from diffusers.loaders.single_file_utils import convert_ldm_vae_checkpoint
    rc.require_same(convert_ldm_vae_checkpoint(dict(ldm), config), state, "convert_ldm_vae_checkpoint(single_file)")
    rc.require_same(convert_ldm_vae_checkpoint({"first_stage_model." + k: t for k, t in ldm.items()}, config), state,
                    "convert_ldm_vae_checkpoint(first_stage_model. + single_file)")
    stats.update(variant=v["name"], seed=v["seed"], tile=tile, n_params=sum(t.numel() for t in state.values()),
                 sd_keys=sorted(state), sf_keys=sorted(ldm))

    # Inputs (generator seed + 1): pipeline-space latents and source pixels.
    g = torch.Generator().manual_seed(v["seed"] + 1)
    processor = VaeImageProcessor(vae_scale_factor=2 ** (n_blocks - 1) * 2)  # as the pipelines build it
    io = {"decode.latents": torch.randn([1, 16, lat_h, lat_w], generator=g)}
    h, w = 2 ** (n_blocks - 1) * lat_h, 2 ** (n_blocks - 1) * lat_w
    io["encode.image_u8"] = torch.randint(0, 256, [1, h, w, 3], generator=g, dtype=torch.int64).to(torch.uint8)
    io["encode.image"] = processor.preprocess(io["encode.image_u8"].numpy().astype(np.float32) / 255.0)
    eps_seed = v["seed"] + 2
    io["encode.eps"] = torch.randn([1, 16, lat_h, lat_w], generator=torch.Generator().manual_seed(eps_seed))

    handles = dbg_hooks(vae, io)
    r = run(diffusers, vae, io, io["decode.latents"], io["encode.image"], eps_seed)
    for hd in handles:
        hd.remove()
    io["decode.vae_in"], io["decode.image"] = r["vae_in"], r["image"]
    for k in ("moments", "mean", "logvar", "std", "sample", "latents", "latents_mode"):
        io[f"encode.{k}"] = r[k]
    rc.require_same({"s": r["mean"] + r["std"] * io["encode.eps"]}, {"s": r["sample"]}, "sample = mean + std * eps")
    io["decode.image_01"] = torch.from_numpy(processor.postprocess(r["image"], output_type="np"))
    io["decode.image_u8"] = torch.from_numpy(np.stack(processor.postprocess(r["image"], output_type="pil")))
    r64 = run(diffusers, copy.deepcopy(vae), io, io["decode.latents"], io["encode.image"], eps_seed, torch.float64)
    io["decode.image_f64"], io["encode.mean_f64"] = r64["image"], r64["mean"]
    stats.update(decode_rerun=rc.max_diff(run(diffusers, vae, io, io["decode.latents"], io["encode.image"],
                                              eps_seed)["image"], r["image"]),
                 decode_absmax=r["image"].abs().max().item(), decode_f64=rc.max_diff(r["image"], r64["image"]),
                 encode_f64=rc.max_diff(r["mean"], r64["mean"]), encode_absmax=r["mean"].abs().max().item(),
                 encode_logvar_f64=rc.max_diff(r["logvar"], r64["logvar"]))

    # Tiled decode / encode with small tiles, so that these sizes do tile.
    vae.enable_tiling()
    vae.tile_sample_min_size, vae.tile_latent_min_size = tile["sample"], tile["latent"]
    with torch.no_grad():
        io["tiled.decode.image"] = vae.decode(io["decode.vae_in"], return_dict=False)[0]
        dist = vae.encode(io["encode.image"]).latent_dist
    io["tiled.encode.moments"], io["tiled.encode.mean"], io["tiled.encode.logvar"] = dist.parameters, dist.mean, dist.logvar
    stats.update(tiled_vs_untiled_decode=rc.max_diff(io["tiled.decode.image"], io["decode.image"]),
                 tiled_vs_untiled_encode=rc.max_diff(io["tiled.encode.mean"], io["encode.mean"]))

    rc.write_safetensors(os.path.join(args.out, "io.safetensors"), io)
    stats["io"] = {k: {"shape": list(io[k].shape), "dtype": "U8" if io[k].dtype == torch.uint8 else "F32"}
                   for k in sorted(io)}
    stats["config"] = config
    rc.finish(args.out, stats, "AutoencoderKL (16 latent channels)", v, __file__)


if __name__ == "__main__":
    main()
