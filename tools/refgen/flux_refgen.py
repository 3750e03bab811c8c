#!/usr/bin/python3
"""Writes a FLUX.1 transformer reference fixture by running upstream diffusers on CPU.

  flux_refgen.py --variant b --out DIR --diffusers DIFFUSERS_CHECKOUT/src

Layout (what tests/unit/models/flux_parity_test.cc reads): config.json, scheduler_config.json,
variant.json, transformer/diffusion_pytorch_model.safetensors (BF16, diffusers keys),
single_file.safetensors (BF16, original BFL keys), single_file_scaled_fp8.safetensors (ComfyUI scaled
fp8), io.safetensors (F32 inputs / outputs: fwd.*, batch.*, dbg.*, loop.*, pack.*), stats.json
(measurements, the fp8 selection, the original -> diffusers key map) and a README.md. Weights are
random (seeded), rounded to BF16; every output is upstream's FluxTransformer2DModel / FluxPipeline /
FlowMatchEulerDiscreteScheduler run in float32. Needs torch, numpy and the standard library.
"""

import argparse
import copy
import inspect
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flux_keys  # noqa: E402
import fp8_e4m3  # noqa: E402
import refgen_common as rc  # noqa: E402
import upstream_env  # noqa: E402

DEV_SCHEDULER = {"base_image_seq_len": 256, "base_shift": 0.5, "max_image_seq_len": 4096, "max_shift": 1.15,
                 "num_train_timesteps": 1000, "shift": 3.0, "use_dynamic_shifting": True}
VARIANTS = {
    # FLUX.1-dev style: the shared fixture's sizes.
    "a": dict(flavour="FLUX.1-dev", seed=20240801, lat_hw=[16, 16], txt_len=11, t=0.75, guidance=3.5,
              batch_t=[0.75, 0.3], batch_guidance=[3.5, 5.0], loop_guidance=3.5, steps=4,
              config=dict(patch_size=1, in_channels=64, out_channels=None, num_layers=2, num_single_layers=2,
                          attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32,
                          pooled_projection_dim=24, guidance_embeds=True, axes_dims_rope=[4, 6, 6]),
              scheduler=DEV_SCHEDULER),
    # FLUX.1-schnell style: no guidance embedder, static shift 1, other sizes, a non-square latent.
    "b": dict(flavour="FLUX.1-schnell", seed=20250317, lat_hw=[12, 20], txt_len=7, t=0.6, guidance=None,
              batch_t=[0.9, 0.25], batch_guidance=None, loop_guidance=0.0, steps=4,
              config=dict(patch_size=1, in_channels=64, out_channels=None, num_layers=1, num_single_layers=3,
                          attention_head_dim=8, num_attention_heads=3, joint_attention_dim=40,
                          pooled_projection_dim=20, guidance_embeds=False, axes_dims_rope=[2, 2, 4]),
              scheduler=dict(DEV_SCHEDULER, shift=1.0, use_dynamic_shifting=False)),
    # FLUX.1-dev's head layout (head_dim 128 split [16, 56, 56], so a bare single file's config can be
    # inferred), one head, one block of each kind, other shift bounds, a small non-square latent.
    "c": dict(flavour="FLUX.1-dev", seed=20250611, lat_hw=[4, 6], txt_len=5, t=0.35, guidance=2.0,
              batch_t=[0.2, 1.0], batch_guidance=[2.0, 7.5], loop_guidance=4.5, steps=3,
              config=dict(patch_size=1, in_channels=64, out_channels=None, num_layers=1, num_single_layers=1,
                          attention_head_dim=128, num_attention_heads=1, joint_attention_dim=48,
                          pooled_projection_dim=16, guidance_embeds=True, axes_dims_rope=[16, 56, 56]),
              scheduler=dict(DEV_SCHEDULER, base_shift=0.3, max_shift=1.4)),
}


def flux_pipeline_class():
    """FluxPipeline from its module: the package-level name is a placeholder when transformers is not
    installed (the text encoders it would load; this generator passes embeddings instead)."""
    upstream_env.add_empty_loader_mixins("FluxIPAdapterMixin", "FluxLoraLoaderMixin", "FromSingleFileMixin",
                                         "TextualInversionLoaderMixin")
    from diffusers.pipelines.flux.pipeline_flux import FluxPipeline
    return FluxPipeline


def patched_converter(diffusers, inner_dim):
    """Upstream's convert_flux_transformer_checkpoint_to_diffusers with its hard-coded
    `inner_dim = 3072` line set to this model's inner_dim (recompiled from upstream's source in its own
    module namespace; nothing else changed)."""
    from diffusers.loaders import single_file_utils as sfu
    source = inspect.getsource(sfu.convert_flux_transformer_checkpoint_to_diffusers)
    if source.count("inner_dim = 3072") != 1:
        raise SystemExit("upstream converter: expected one `inner_dim = 3072` line")
    scope = dict(sfu.__dict__)
    exec(compile(source.replace("inner_dim = 3072", f"inner_dim = {inner_dim}"), sfu.__file__, "exec"), scope)
    return scope["convert_flux_transformer_checkpoint_to_diffusers"]


def forward(model, x, ehs, pooled, t, img_ids, txt_ids, guidance, dtype=torch.float32):
    m = model.to(dtype)
    with torch.no_grad():
        out = m(hidden_states=x.to(dtype), encoder_hidden_states=ehs.to(dtype), pooled_projections=pooled.to(dtype),
                timestep=t.to(dtype), img_ids=img_ids.to(dtype), txt_ids=txt_ids.to(dtype),
                guidance=None if guidance is None else guidance.to(dtype), return_dict=False)[0]
    model.to(torch.float32)
    return out.to(torch.float32)


def debug_hooks(model, io):
    """Forward hooks recording fwd's intermediates as dbg.* (batch dim dropped)."""
    handles = []

    def keep(name, fn):
        return lambda mod, inp, out: io.__setitem__(name, fn(inp, out).detach().clone())
    handles.append(model.x_embedder.register_forward_hook(keep("dbg.x_embed", lambda i, o: o[0])))
    handles.append(model.context_embedder.register_forward_hook(keep("dbg.ctx_embed", lambda i, o: o[0])))
    handles.append(model.time_text_embed.register_forward_hook(keep("dbg.temb", lambda i, o: o)))
    handles.append(model.time_text_embed.register_forward_hook(keep("dbg.time_in", lambda i, o: i[0])))
    if model.config.guidance_embeds:
        handles.append(model.time_text_embed.register_forward_hook(keep("dbg.guidance_in", lambda i, o: i[1])))
    handles.append(model.pos_embed.register_forward_hook(keep("dbg.rope_cos", lambda i, o: o[0])))
    handles.append(model.pos_embed.register_forward_hook(keep("dbg.rope_sin", lambda i, o: o[1])))
    handles.append(model.norm_out.register_forward_hook(keep("dbg.norm_out", lambda i, o: o[0])))
    for n, block in enumerate(model.transformer_blocks):
        handles.append(block.register_forward_hook(keep(f"dbg.double{n}_txt", lambda i, o: o[0][0])))
        handles.append(block.register_forward_hook(keep(f"dbg.double{n}_img", lambda i, o: o[1][0])))
    for n, block in enumerate(model.single_transformer_blocks):
        handles.append(block.register_forward_hook(keep(f"dbg.single{n}_txt", lambda i, o: o[0][0])))
        handles.append(block.register_forward_hook(keep(f"dbg.single{n}_img", lambda i, o: o[1][0])))
    return handles


def run_loop(diffusers, model, v, io, lat_h, lat_w):
    """FluxPipeline.__call__ with precomputed embeddings, output_type='latent'; records every
    transformer call and every step's latents."""
    scheduler = diffusers.FlowMatchEulerDiscreteScheduler.from_config(v["scheduler"])
    pipe = flux_pipeline_class()(scheduler=scheduler, vae=None, text_encoder=None, tokenizer=None,
                                  text_encoder_2=None, tokenizer_2=None, transformer=model)
    calls, latents = [], []
    plain_forward = model.forward

    def recording_forward(*args, **kwargs):
        out = plain_forward(*args, **kwargs)
        calls.append({k: kwargs.get(k) for k in ("hidden_states", "timestep", "guidance", "img_ids", "txt_ids")})
        calls[-1]["out"] = out[0] if isinstance(out, tuple) else out.sample
        return out
    model.forward = recording_forward

    def on_step_end(p, i, t, kw):
        latents.append(kw["latents"].detach().clone())
        return {}
    seed = v["seed"] + 2
    try:
        with torch.no_grad():
            final = pipe(prompt_embeds=io["loop.encoder_hidden_states"], pooled_prompt_embeds=io["loop.pooled_projections"],
                         height=8 * lat_h, width=8 * lat_w, num_inference_steps=v["steps"],
                         guidance_scale=v["loop_guidance"], generator=torch.Generator().manual_seed(seed),
                         output_type="latent", callback_on_step_end=on_step_end, return_dict=False)[0]
    finally:
        del model.forward
    io["loop.noise"] = torch.randn([1, 16, lat_h, lat_w], generator=torch.Generator().manual_seed(seed))
    io["loop.noise_packed"] = pipe._pack_latents(io["loop.noise"], 1, 16, lat_h, lat_w)
    io["loop.final"] = final
    io["loop.final_unpacked"] = pipe._unpack_latents(final, 8 * lat_h, 8 * lat_w, pipe.vae_scale_factor)
    io["loop.latents"] = torch.cat(latents, 0)
    io["loop.model_in"] = torch.cat([c["hidden_states"] for c in calls], 0)
    io["loop.model_out"] = torch.cat([c["out"] for c in calls], 0)
    io["loop.model_t"] = torch.cat([c["timestep"] for c in calls], 0)
    if model.config.guidance_embeds:
        io["loop.model_guidance"] = torch.cat([c["guidance"] for c in calls], 0)
    io["loop.img_ids"], io["loop.txt_ids"] = calls[0]["img_ids"], calls[0]["txt_ids"]
    io["loop.sigmas"] = scheduler.sigmas.to(torch.float32)
    io["loop.timesteps"] = scheduler.timesteps.to(torch.float32)
    io["loop.guidance_scale"] = torch.tensor([float(v["loop_guidance"])])
    seq = (lat_h // 2) * (lat_w // 2)
    from diffusers.pipelines.flux.pipeline_flux import calculate_shift
    s = v["scheduler"]
    mu = calculate_shift(seq, s["base_image_seq_len"], s["max_image_seq_len"], s["base_shift"], s["max_shift"])
    io["loop.mu"], io["loop.image_seq_len"] = torch.tensor([mu]), torch.tensor([float(seq)])
    if not torch.equal(io["loop.noise_packed"], io["loop.model_in"][:1]):
        raise SystemExit("the pipeline's first latents are not the seeded noise")
    return {"image_seq_len": seq, "mu": mu, "sigmas": io["loop.sigmas"].tolist(),
            "timesteps": io["loop.timesteps"].tolist(), "model_t": io["loop.model_t"].tolist()}


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
    v = dict(VARIANTS[args.variant], name=args.variant)
    cfg, (lat_h, lat_w), L = v["config"], v["lat_hw"], v["txt_len"]
    os.makedirs(os.path.join(args.out, "transformer"), exist_ok=True)
    stats = rc.provenance(args.diffusers, upstream_env.SHIMS, args.commit)
    stats["e4m3fn_selftest"] = fp8_e4m3.self_test()

    model = diffusers.FluxTransformer2DModel(**cfg).eval()
    rc.randomize_bf16(model, torch.Generator().manual_seed(v["seed"]))
    state = {k: t.detach().clone() for k, t in model.state_dict().items()}
    inner = cfg["num_attention_heads"] * cfg["attention_head_dim"]
    stats.update(variant=v["name"], flavour=v["flavour"], seed=v["seed"], inner_dim=inner,
                 mlp_hidden=int(inner * 4.0),
                 n_params=sum(t.numel() for t in state.values()), first_param=next(iter(state)))

    # Weight files: diffusers folder, original keys, scaled fp8.
    rc.write_json(os.path.join(args.out, "config.json"), json.loads(model.to_json_string()))
    rc.write_json(os.path.join(args.out, "scheduler_config.json"),
                  dict(_class_name="FlowMatchEulerDiscreteScheduler", **v["scheduler"]))
    rc.write_json(os.path.join(args.out, "variant.json"), v)
    rc.write_weights(os.path.join(args.out, "transformer", "diffusion_pytorch_model.safetensors"), state)
    original = flux_keys.to_original(state)
    rc.write_weights(os.path.join(args.out, "single_file.safetensors"), original)
    convert = patched_converter(diffusers, inner)
    rc.require_same(convert(dict(original)), state, "upstream converter(single_file) vs diffusers weights")
    stats["sf_keys"] = sorted(original)
    stats["sf_to_diffusers"] = rc.key_map_through_upstream(convert, original)
    lwc, fp8_weights = rc.layerwise_casting_selection(model)
    linear_params = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)
                     for n in (n + ".weight", n + ".bias")]
    stats.update(lwc_params=lwc, fp8_weights=fp8_weights, not_rounded_linear=[n for n in linear_params if n not in lwc],
                 skip_patterns=sorted(set(diffusers.hooks.layerwise_casting.DEFAULT_SKIP_MODULES_PATTERN)
                                      | set(model._skip_layerwise_casting_patterns or [])))
    quantised = flux_keys.scaled_fp8_names(fp8_weights, state)
    tensors, dtypes, dequantised = fp8_e4m3.scaled_fp8_file(original, quantised)
    rc.write_safetensors(os.path.join(args.out, "single_file_scaled_fp8.safetensors"), tensors, dtypes)
    stats["scaled_fp8_keys"] = quantised

    # Inputs (generator seed + 1) and single / batched forwards.
    g = torch.Generator().manual_seed(v["seed"] + 1)
    S, joint, pooled_dim = (lat_h // 2) * (lat_w // 2), cfg["joint_attention_dim"], cfg["pooled_projection_dim"]
    pipe_cls = flux_pipeline_class()
    io = {"fwd.hidden_states": torch.randn([1, S, 64], generator=g),
          "fwd.encoder_hidden_states": torch.randn([1, L, joint], generator=g),
          "fwd.pooled_projections": torch.randn([1, pooled_dim], generator=g),
          "fwd.timestep": torch.tensor([v["t"]], dtype=torch.float32),
          "fwd.img_ids": pipe_cls._prepare_latent_image_ids(1, lat_h // 2, lat_w // 2, "cpu", torch.float32),
          "fwd.txt_ids": torch.zeros(L, 3),
          "batch.hidden_states": torch.randn([2, S, 64], generator=g),
          "batch.encoder_hidden_states": torch.randn([2, L, joint], generator=g),
          "batch.pooled_projections": torch.randn([2, pooled_dim], generator=g),
          "batch.timestep": torch.tensor(v["batch_t"], dtype=torch.float32),
          "pack.latents": torch.randn([2, 16, lat_h, lat_w], generator=g)}
    if cfg["guidance_embeds"]:
        io["fwd.guidance"] = torch.tensor([v["guidance"]], dtype=torch.float32)
        io["batch.guidance"] = torch.tensor(v["batch_guidance"], dtype=torch.float32)
    io["pack.packed"] = pipe_cls._pack_latents(io["pack.latents"], 2, 16, lat_h, lat_w)
    io["pack.img_ids"] = io["fwd.img_ids"]
    rc.require_same({"x": pipe_cls._unpack_latents(io["pack.packed"], 8 * lat_h, 8 * lat_w, 8)},
                    {"x": io["pack.latents"]}, "_unpack_latents(_pack_latents(x))")

    def fwd(m, prefix, dtype=torch.float32):
        return forward(m, io[f"{prefix}.hidden_states"], io[f"{prefix}.encoder_hidden_states"],
                       io[f"{prefix}.pooled_projections"], io[f"{prefix}.timestep"], io["fwd.img_ids"],
                       io["fwd.txt_ids"], io.get(f"{prefix}.guidance"), dtype)
    handles = debug_hooks(model, io)
    io["fwd.out"] = fwd(model, "fwd")
    for h in handles:
        h.remove()
    for k in [k for k in io if k.startswith("dbg.") and io[k].dim() == 3]:
        io[k] = io[k][0]
    stats["fwd_rerun"] = rc.max_diff(fwd(model, "fwd"), io["fwd.out"])
    io["batch.out"] = fwd(model, "batch")
    io["fwd.out_f64"] = fwd(model, "fwd", torch.float64)
    io["fwd.out_bf16"] = fwd(model, "fwd", torch.bfloat16)
    io["fwd.out_fp8"] = fwd(rc.with_rounded(model, fp8_weights), "fwd")
    io["fwd.out_fp8_lwc"] = fwd(rc.with_rounded(model, lwc), "fwd")
    scaled = copy.deepcopy(model)
    scaled.load_state_dict(flux_keys.split_like(dequantised, state))
    io["fwd.out_fp8_scaled"] = fwd(scaled, "fwd")
    single = [fwd_item for fwd_item in (
        forward(model, io["batch.hidden_states"][i:i + 1], io["batch.encoder_hidden_states"][i:i + 1],
                io["batch.pooled_projections"][i:i + 1], io["batch.timestep"][i:i + 1], io["fwd.img_ids"],
                io["fwd.txt_ids"], io["batch.guidance"][i:i + 1] if "batch.guidance" in io else None)
        for i in range(2))]
    stats.update(fwd_f64=rc.max_diff(io["fwd.out"], io["fwd.out_f64"]), fwd_absmax=io["fwd.out"].abs().max().item(),
                 fwd_bf16=rc.max_diff(io["fwd.out"], io["fwd.out_bf16"]),
                 batch_vs_single=rc.max_diff(io["batch.out"], torch.cat(single, 0)),
                 fp8=rc.max_diff(io["fwd.out"], io["fwd.out_fp8"]),
                 fp8_lwc=rc.max_diff(io["fwd.out"], io["fwd.out_fp8_lwc"]),
                 fp8_scaled=rc.max_diff(io["fwd.out"], io["fwd.out_fp8_scaled"]))

    # The pipeline loop.
    io["loop.encoder_hidden_states"] = io["fwd.encoder_hidden_states"]
    io["loop.pooled_projections"] = io["fwd.pooled_projections"]
    stats["loop"] = run_loop(diffusers, model, v, io, lat_h, lat_w)
    stats["loop_step0_vs_direct"] = rc.max_diff(
        io["loop.model_out"][:1], forward(model, io["loop.model_in"][:1], io["loop.encoder_hidden_states"],
                                          io["loop.pooled_projections"], io["loop.model_t"][:1], io["loop.img_ids"],
                                          io["loop.txt_ids"],
                                          io["loop.model_guidance"][:1] if "loop.model_guidance" in io else None))
    stats["steps"] = v["steps"]

    rc.write_safetensors(os.path.join(args.out, "io.safetensors"), io)
    stats["io"] = {k: list(io[k].shape) for k in sorted(io)}
    stats["config"] = json.loads(model.to_json_string())
    stats["scheduler_config"] = v["scheduler"]
    rc.finish(args.out, stats, "FLUX.1 transformer", v, __file__)


if __name__ == "__main__":
    main()
