"""FLUX.1 weights in the original Black Forest Labs / ComfyUI layout, and which of them its scaled-fp8
form quantises.

diffusers ships only the original -> diffusers direction (single_file_utils.
convert_flux_transformer_checkpoint_to_diffusers); `to_original` is the inverse, written from the
layout description (fused q/k/v(/mlp) rows, "scale" for RMSNorm weights, the final modulation's
[shift; scale] halves). flux_refgen.py proves it by converting back through upstream's converter
bit-exactly. Not here: running upstream (flux_refgen.py).
"""

import re

import numpy as np
import torch

_PLAIN = [  # (diffusers prefix, original prefix); both followed by ".weight" / ".bias"
    ("x_embedder", "img_in"), ("context_embedder", "txt_in"),
    ("time_text_embed.timestep_embedder.linear_1", "time_in.in_layer"),
    ("time_text_embed.timestep_embedder.linear_2", "time_in.out_layer"),
    ("time_text_embed.text_embedder.linear_1", "vector_in.in_layer"),
    ("time_text_embed.text_embedder.linear_2", "vector_in.out_layer"),
    ("time_text_embed.guidance_embedder.linear_1", "guidance_in.in_layer"),
    ("time_text_embed.guidance_embedder.linear_2", "guidance_in.out_layer"),
    ("proj_out", "final_layer.linear"),
]
_DOUBLE = [
    ("norm1.linear", "img_mod.lin"), ("norm1_context.linear", "txt_mod.lin"),
    ("attn.to_out.0", "img_attn.proj"), ("attn.to_add_out", "txt_attn.proj"),
    ("ff.net.0.proj", "img_mlp.0"), ("ff.net.2", "img_mlp.2"),
    ("ff_context.net.0.proj", "txt_mlp.0"), ("ff_context.net.2", "txt_mlp.2"),
]
_DOUBLE_NORMS = [
    ("attn.norm_q", "img_attn.norm.query_norm"), ("attn.norm_k", "img_attn.norm.key_norm"),
    ("attn.norm_added_q", "txt_attn.norm.query_norm"), ("attn.norm_added_k", "txt_attn.norm.key_norm"),
]
_DOUBLE_FUSED = [
    (("attn.to_q", "attn.to_k", "attn.to_v"), "img_attn.qkv"),
    (("attn.add_q_proj", "attn.add_k_proj", "attn.add_v_proj"), "txt_attn.qkv"),
]
_SINGLE = [("norm.linear", "modulation.lin"), ("proj_out", "linear2")]
_SINGLE_NORMS = [("attn.norm_q", "norm.query_norm"), ("attn.norm_k", "norm.key_norm")]
_SINGLE_FUSED = [(("attn.to_q", "attn.to_k", "attn.to_v", "proj_mlp"), "linear1")]


def _block_count(state, prefix):
    found = {int(m.group(1)) for k in state for m in [re.match(re.escape(prefix) + r"\.(\d+)\.", k)] if m}
    return max(found) + 1 if found else 0


def original_parts(diffusers_state):
    """Returns {original key: [diffusers keys, concatenated along rows]} for this state dict, plus the
    set of original keys whose two row halves are swapped (the final modulation)."""
    parts, swapped = {}, set()
    for suffix in ("weight", "bias"):
        for d, o in _PLAIN:
            parts[f"{o}.{suffix}"] = [f"{d}.{suffix}"]
        parts[f"final_layer.adaLN_modulation.1.{suffix}"] = [f"norm_out.linear.{suffix}"]
        swapped.add(f"final_layer.adaLN_modulation.1.{suffix}")
        for n in range(_block_count(diffusers_state, "transformer_blocks")):
            d0, o0 = f"transformer_blocks.{n}", f"double_blocks.{n}"
            for d, o in _DOUBLE:
                parts[f"{o0}.{o}.{suffix}"] = [f"{d0}.{d}.{suffix}"]
            for ds, o in _DOUBLE_FUSED:
                parts[f"{o0}.{o}.{suffix}"] = [f"{d0}.{d}.{suffix}" for d in ds]
        for n in range(_block_count(diffusers_state, "single_transformer_blocks")):
            d0, o0 = f"single_transformer_blocks.{n}", f"single_blocks.{n}"
            for d, o in _SINGLE:
                parts[f"{o0}.{o}.{suffix}"] = [f"{d0}.{d}.{suffix}"]
            for ds, o in _SINGLE_FUSED:
                parts[f"{o0}.{o}.{suffix}"] = [f"{d0}.{d}.{suffix}" for d in ds]
    for n in range(_block_count(diffusers_state, "transformer_blocks")):
        for d, o in _DOUBLE_NORMS:
            parts[f"double_blocks.{n}.{o}.scale"] = [f"transformer_blocks.{n}.{d}.weight"]
    for n in range(_block_count(diffusers_state, "single_transformer_blocks")):
        for d, o in _SINGLE_NORMS:
            parts[f"single_blocks.{n}.{o}.scale"] = [f"single_transformer_blocks.{n}.{d}.weight"]
    parts = {o: ds for o, ds in parts.items() if all(d in diffusers_state for d in ds)}
    used = {d for ds in parts.values() for d in ds}
    if used != set(diffusers_state):
        raise ValueError(f"diffusers keys without an original name: {sorted(set(diffusers_state) - used)}")
    return parts, swapped & set(parts)


def to_original(diffusers_state):
    """Returns the original-layout state dict (same tensors, fused and renamed)."""
    parts, swapped = original_parts(diffusers_state)
    out = {}
    for o, ds in parts.items():
        t = torch.cat([diffusers_state[d] for d in ds], dim=0)
        if o in swapped:
            scale, shift = t.chunk(2, dim=0)
            t = torch.cat([shift, scale], dim=0)
        out[o] = t.contiguous()
    return out


def scaled_fp8_names(diffusers_fp8_weights, diffusers_state):
    """Original weights to store as scaled fp8: those whose diffusers parts are all in
    `diffusers_fp8_weights` (a fused tensor is quantised iff all its parts are)."""
    parts, _ = original_parts(diffusers_state)
    wanted = set(diffusers_fp8_weights)
    return sorted(n for n, ds in parts.items() if n.endswith(".weight") and all(d in wanted for d in ds))


def split_like(original_state, diffusers_state):
    """Inverse of to_original with our own mapping: original tensors -> diffusers names."""
    parts, swapped = original_parts(diffusers_state)
    out = {}
    for o, ds in parts.items():
        t = original_state[o]
        if o in swapped:
            shift, scale = t.chunk(2, dim=0)
            t = torch.cat([scale, shift], dim=0)
        rows = np.cumsum([0] + [diffusers_state[d].shape[0] for d in ds])
        for d, a, b in zip(ds, rows[:-1], rows[1:]):
            out[d] = t[a:b].clone()
    return out
