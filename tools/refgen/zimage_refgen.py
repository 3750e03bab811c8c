#!/usr/bin/python3
"""Writes a Z-Image transformer reference fixture by running upstream diffusers on CPU.

  zimage_refgen.py --variant b --out DIR --diffusers DIFFUSERS_CHECKOUT/src [--commit SHA]

Layout (what tests/unit/models/z_image_parity_test.cc reads): config.json, scheduler_config.json,
variant.json, transformer/diffusion_pytorch_model.safetensors (BF16, diffusers keys),
single_file.safetensors (BF16, original Z-Image / ComfyUI keys), single_file_scaled_fp8.safetensors,
io.safetensors (fwd.*, batch.*, dbg.*, nocfg.*, cfg.*), stats.json and README.md. Weights are random
(seeded), rounded to BF16; outputs are upstream's ZImageTransformer2DModel / ZImagePipeline /
FlowMatchEulerDiscreteScheduler in float32.
"""

import argparse
import copy
import json
import os
import re
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fp8_e4m3  # noqa: E402
import refgen_common as rc  # noqa: E402
import upstream_env  # noqa: E402

BASE = dict(all_patch_size=[2], all_f_patch_size=[1], in_channels=16, norm_eps=1e-05, qk_norm=True,
            siglip_feat_dim=None, t_scale=1000.0)
VARIANTS = {
    "a": dict(seed=20240611, t=0.3, lat_hw=[12, 12], cap_len=37, neg_len=11, batch_caps=[37, 19], batch_t=[0.3, 0.85],
              guidance=4.0, steps=4, scheduler=dict(num_train_timesteps=1000, shift=3.0, use_dynamic_shifting=False),
              config=dict(BASE, dim=64, n_layers=2, n_refiner_layers=2, n_heads=2, n_kv_heads=2, cap_feat_dim=96,
                          rope_theta=256.0, axes_dims=[8, 12, 12], axes_lens=[256, 32, 32])),
    # Other widths and depths, head_dim 24 split [4, 8, 12] over (f, h, w), another RoPE theta and shift,
    # a non-square latent.
    "b": dict(seed=20251102, t=0.55, lat_hw=[10, 14], cap_len=23, neg_len=6, batch_caps=[23, 40], batch_t=[0.1, 0.7],
              guidance=2.5, steps=4, scheduler=dict(num_train_timesteps=1000, shift=2.5, use_dynamic_shifting=False),
              config=dict(BASE, dim=72, n_layers=3, n_refiner_layers=1, n_heads=3, n_kv_heads=3, cap_feat_dim=56,
                          rope_theta=500.0, axes_dims=[4, 8, 12], axes_lens=[128, 24, 24])),
}


def to_original(state):
    """diffusers keys -> original Z-Image keys (fused qkv rows [q; k; v])."""
    out = {}
    for key, t in state.items():
        m = re.match(r"(.*\.attention)\.to_q\.weight$", key)
        if m:
            out[m.group(1) + ".qkv.weight"] = torch.cat([state[f"{m.group(1)}.to_{p}.weight"] for p in "qkv"], 0)
            continue
        if re.search(r"\.attention\.to_[kv]\.weight$", key):
            continue
        k = key.replace("all_x_embedder.2-1.", "x_embedder.").replace("all_final_layer.2-1.", "final_layer.")
        k = k.replace(".attention.to_out.0.", ".attention.out.").replace(".attention.norm_q.", ".attention.q_norm.")
        out[k.replace(".attention.norm_k.", ".attention.k_norm.")] = t
    return {k: t.contiguous() for k, t in out.items()}


def original_parts(state):
    """original key -> its diffusers parts (three for a fused qkv)."""
    parts = {}
    for o in to_original(state):
        if o.endswith(".attention.qkv.weight"):
            parts[o] = [o.replace(".qkv.", f".to_{p}.") for p in "qkv"]
        else:
            d = o.replace("x_embedder.", "all_x_embedder.2-1.", 1) if o.startswith("x_embedder.") else o
            d = d.replace("final_layer.", "all_final_layer.2-1.", 1) if d.startswith("final_layer.") else d
            d = d.replace(".attention.out.", ".attention.to_out.0.").replace(".attention.q_norm.", ".attention.norm_q.")
            parts[o] = [d.replace(".attention.k_norm.", ".attention.norm_k.")]
    return parts


def forward(model, xs, t, caps, dtype=torch.float32):
    m = model.to(dtype)
    with torch.no_grad():
        out = m([x.to(dtype) for x in xs], t.to(dtype), [c.to(dtype) for c in caps], return_dict=False)[0]
    model.to(torch.float32)
    return [o.to(torch.float32) for o in out]


def debug_hooks(model, io):
    def keep(name):
        def hook(mod, inp, out):
            out = out[0] if isinstance(out, tuple) else out
            io[name] = (out[0] if out.dim() == 3 else out).detach().clone()
        return hook
    mods = {"dbg.x_embed": model.all_x_embedder["2-1"], "dbg.cap_embed": model.cap_embedder,
            "dbg.t_emb": model.t_embedder, "dbg.noise_refiner_out": model.noise_refiner[-1],
            "dbg.context_refiner_out": model.context_refiner[-1], "dbg.layer0_out": model.layers[0],
            "dbg.last_layer_out": model.layers[-1], "dbg.final_layer_out": model.all_final_layer["2-1"]}
    return [m.register_forward_hook(keep(n)) for n, m in mods.items()]


def run_loop(pipe_cls, diffusers, model, v, io, prefix, guidance, neg):
    """ZImagePipeline.__call__ with precomputed caption features, latents= noise, output_type='latent'."""
    scheduler = diffusers.FlowMatchEulerDiscreteScheduler.from_config(v["scheduler"])
    pipe = pipe_cls(scheduler=scheduler, vae=None, text_encoder=None, tokenizer=None, transformer=model)
    calls, preds, latents = [], [], []
    plain_forward, plain_step = model.forward, scheduler.step

    def recording_forward(x, t, caps, *a, **k):
        out = plain_forward(x, t, caps, *a, **k)
        calls.append((torch.stack(x).squeeze(2), t.clone(), torch.stack(out[0]).squeeze(2)))
        return out

    def recording_step(model_output, *a, **k):
        preds.append(model_output.detach().clone())
        return plain_step(model_output, *a, **k)
    model.forward, scheduler.step = recording_forward, recording_step
    lat_h, lat_w = v["lat_hw"]
    kwargs = dict(negative_prompt_embeds=[neg]) if guidance > 0 else {}
    try:
        with torch.no_grad():
            final = pipe(prompt_embeds=[io[f"{prefix}.cap_feats"]], guidance_scale=guidance, height=8 * lat_h,
                         width=8 * lat_w, num_inference_steps=v["steps"], latents=io[f"{prefix}.noise"].clone(),
                         output_type="latent", return_dict=False,
                         callback_on_step_end=lambda p, i, t, kw: latents.append(kw["latents"].clone()) or {},
                         **kwargs)[0]
    finally:
        del model.forward
        del scheduler.step
    io[f"{prefix}.final"] = final
    io[f"{prefix}.latents"] = torch.cat(latents, 0)
    io[f"{prefix}.model_in"] = torch.stack([c[0][0] for c in calls])
    io[f"{prefix}.model_t"] = torch.stack([c[1][0] for c in calls])
    io[f"{prefix}.noise_pred"] = torch.cat(preds, 0)
    if guidance > 0:
        io[f"{prefix}.model_out_pos"] = torch.stack([c[2][0] for c in calls])
        io[f"{prefix}.model_out_neg"] = torch.stack([c[2][1] for c in calls])
    else:
        io[f"{prefix}.model_out"] = torch.stack([c[2][0] for c in calls])
    io[f"{prefix}.sigmas"] = scheduler.sigmas.to(torch.float32)
    io[f"{prefix}.timesteps"] = scheduler.timesteps.to(torch.float32)
    io[f"{prefix}.guidance_scale"] = torch.tensor([float(guidance)])


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
    from diffusers.models.transformers import transformer_z_image as zi
    upstream_env.fix_z_image_for_torch1(zi)
    upstream_env.add_empty_loader_mixins("FromSingleFileMixin", "ZImageLoraLoaderMixin")
    from diffusers.pipelines.z_image.pipeline_z_image import ZImagePipeline
    from diffusers.loaders.single_file_utils import convert_z_image_transformer_checkpoint_to_diffusers as convert
    v = dict(VARIANTS[args.variant], name=args.variant)
    cfg, (lat_h, lat_w) = v["config"], v["lat_hw"]
    os.makedirs(os.path.join(args.out, "transformer"), exist_ok=True)
    stats = rc.provenance(args.diffusers, upstream_env.SHIMS, args.commit)
    stats["e4m3fn_selftest"] = fp8_e4m3.self_test()

    model = zi.ZImageTransformer2DModel(**cfg).eval()
    rc.randomize_bf16(model, torch.Generator().manual_seed(v["seed"]))
    state = {k: t.detach().clone() for k, t in model.state_dict().items()}
    config = json.loads(model.to_json_string())
    rc.write_json(os.path.join(args.out, "config.json"), config)
    rc.write_json(os.path.join(args.out, "scheduler_config.json"),
                  dict(_class_name="FlowMatchEulerDiscreteScheduler", **v["scheduler"]))
    rc.write_json(os.path.join(args.out, "variant.json"), v)
    rc.write_weights(os.path.join(args.out, "transformer", "diffusion_pytorch_model.safetensors"), state)
    original = to_original(state)
    rc.write_weights(os.path.join(args.out, "single_file.safetensors"), original)
    rc.require_same(convert(dict(original)), state, "upstream converter(single_file) vs diffusers weights")
    lwc, fp8_weights = rc.layerwise_casting_selection(model)
    parts = original_parts(state)
    quantised = sorted(o for o, ds in parts.items() if o.endswith(".weight") and all(d in fp8_weights for d in ds))
    tensors, dtypes, dequantised = fp8_e4m3.scaled_fp8_file(original, quantised)
    rc.write_safetensors(os.path.join(args.out, "single_file_scaled_fp8.safetensors"), tensors, dtypes)
    stats.update(variant=v["name"], seed=v["seed"], n_params=sum(t.numel() for t in state.values()),
                 first_param=next(iter(state)), fp8_weights=fp8_weights, lwc_params=lwc, scaled_fp8_keys=quantised,
                 sf_keys=sorted(original), sf_to_diffusers=rc.key_map_through_upstream(convert, original))

    g = torch.Generator().manual_seed(v["seed"] + 1)
    C, D = cfg["in_channels"], cfg["cap_feat_dim"]
    io = {"fwd.x": torch.randn([C, 1, lat_h, lat_w], generator=g), "fwd.t": torch.tensor([v["t"]]),
          "fwd.cap_feats": torch.randn([v["cap_len"], D], generator=g),
          "batch.x": torch.randn([2, C, 1, lat_h, lat_w], generator=g), "batch.t": torch.tensor(v["batch_t"]),
          "batch.cap_feats_0": torch.randn([v["batch_caps"][0], D], generator=g),
          "batch.cap_feats_1": torch.randn([v["batch_caps"][1], D], generator=g),
          "cfg.neg_cap_feats": torch.randn([v["neg_len"], D], generator=g)}
    io["nocfg.noise"] = torch.randn([1, C, lat_h, lat_w], generator=g)
    io["cfg.noise"] = io["nocfg.noise"]
    io["nocfg.cap_feats"] = io["cfg.cap_feats"] = io["fwd.cap_feats"]

    def fwd(m, dtype=torch.float32):
        return forward(m, [io["fwd.x"]], io["fwd.t"], [io["fwd.cap_feats"]], dtype)[0]
    handles = debug_hooks(model, io)
    io["fwd.out"] = fwd(model)
    for h in handles:
        h.remove()
    io["batch.out"] = torch.stack(forward(model, list(io["batch.x"]), io["batch.t"],
                                          [io["batch.cap_feats_0"], io["batch.cap_feats_1"]]))
    io["fwd.out_f64"], io["fwd.out_bf16"] = fwd(model, torch.float64), fwd(model, torch.bfloat16)
    io["fwd.out_fp8"], io["fwd.out_fp8_lwc"] = fwd(rc.with_rounded(model, fp8_weights)), fwd(rc.with_rounded(model, lwc))
    scaled = copy.deepcopy(model)
    scaled.load_state_dict(convert(dict(dequantised)))
    io["fwd.out_fp8_scaled"] = fwd(scaled)
    alone = [forward(model, [io["batch.x"][i]], io["batch.t"][i:i + 1], [io[f"batch.cap_feats_{i}"]])[0] for i in (0, 1)]
    stats.update(fwd_rerun=rc.max_diff(fwd(model), io["fwd.out"]), fwd_f64=rc.max_diff(io["fwd.out"], io["fwd.out_f64"]),
                 fwd_absmax=io["fwd.out"].abs().max().item(), fwd_bf16=rc.max_diff(io["fwd.out"], io["fwd.out_bf16"]),
                 batch_vs_single=rc.max_diff(io["batch.out"], torch.stack(alone)),
                 fp8=rc.max_diff(io["fwd.out"], io["fwd.out_fp8"]), fp8_lwc=rc.max_diff(io["fwd.out"], io["fwd.out_fp8_lwc"]),
                 fp8_scaled=rc.max_diff(io["fwd.out"], io["fwd.out_fp8_scaled"]))

    run_loop(ZImagePipeline, diffusers, model, v, io, "nocfg", 0.0, None)
    run_loop(ZImagePipeline, diffusers, model, v, io, "cfg", v["guidance"], io["cfg.neg_cap_feats"])
    stats["cfg_batched_vs_nocfg_step0"] = rc.max_diff(io["cfg.model_out_pos"][0], io["nocfg.model_out"][0])
    stats["steps"] = v["steps"]
    rc.write_safetensors(os.path.join(args.out, "io.safetensors"), io)
    stats["io"] = {k: list(io[k].shape) for k in sorted(io)}
    stats["config"] = config
    rc.finish(args.out, stats, "Z-Image transformer", v, __file__)


if __name__ == "__main__":
    main()
