#!/usr/bin/env python3
"""Writes the wire fuzz target's seed corpus: valid requests and the hostile
ones docs/reliability.md lists, serialized. The target reads every input as
each request type, so one file per case is enough.

  PYTHONPATH=build/release/python python3 tests/fuzz/wire_corpus.py tests/fuzz/corpus/wire
"""
import math
import struct
import sys
from pathlib import Path

from diffusiond.v1 import cache_service_pb2 as cache
from diffusiond.v1 import denoise_service_pb2 as denoise
from diffusiond.v1 import model_service_pb2 as model
from diffusiond.v1 import pipeline_service_pb2 as pipeline
from diffusiond.v1 import tensor_pb2 as tensor


def f32(shape, values):
    return tensor.Tensor(dtype=tensor.DTYPE_FLOAT32, shape=shape, data=struct.pack(f"<{len(values)}f", *values))


def named(name, t):
    return tensor.NamedTensor(name=name, tensor=t)


def denoise_request(**fields):
    r = denoise.DenoiseRequest(model_id="m", latent_shape=[16, 8, 8], steps=4)
    r.conditioning.tensors.append(named("caption", f32([1], [0.5])))
    for key, value in fields.items():
        if key == "initial_latents":
            r.initial_latents.CopyFrom(value)
        else:
            setattr(r, key, value)
    return r


def cases():
    nan, inf = math.nan, math.inf
    yield "denoise_valid", denoise_request()
    yield "denoise_initial_latents", denoise_request(initial_latents=f32([1, 2, 2], [0.1, -0.2, 0.3, 1.5]))
    yield "denoise_nan_latents", denoise_request(initial_latents=f32([1, 1, 2], [0.1, nan]))
    yield "denoise_inf_latents_bf16", denoise_request(
        initial_latents=tensor.Tensor(dtype=tensor.DTYPE_BFLOAT16, shape=[2], data=b"\x00\x00\x80\x7f"))
    yield "denoise_int_latents", denoise_request(
        initial_latents=tensor.Tensor(dtype=tensor.DTYPE_INT32, shape=[1], data=b"\x01\x00\x00\x00"))
    yield "denoise_million_steps", denoise_request(steps=1000000)
    yield "denoise_nan_guidance", denoise_request(guidance_scale=nan)
    yield "denoise_inf_shift", denoise_request(shift=inf)
    sigmas = denoise_request()
    sigmas.sigmas.extend(1.0 - i / 1001 for i in range(1001))
    yield "denoise_1001_sigmas", sigmas
    guided = denoise_request(guidance_scale=4.0)
    guided.negative.tensors.append(named("caption", f32([1], [0.0])))
    guided.negative.scalars["guidance"] = 3.5
    yield "denoise_negative", guided
    dup = denoise_request()
    dup.conditioning.tensors.append(named("caption", f32([1], [0.0])))
    yield "denoise_repeated_name", dup
    # 400 names no model reads, and 100 scalars: the refusal lists four and a count.
    many = denoise_request()
    for i in range(400):
        many.conditioning.tensors.append(named(f"unexpected_{i}_" + "n" * 80, f32([1], [0.5])))
    for i in range(100):
        many.conditioning.scalars[f"scalar_{i}"] = 1.0
    yield "denoise_many_names", many

    yield "step_valid", denoise.StepRequest(model_id="m", inputs=[named("x", f32([2], [1, -1])), named("t", f32([1], [0.5]))])
    yield "step_empty_name", denoise.StepRequest(inputs=[named("", f32([1], [0]))])
    # 3 GB declared, 12 bytes sent.
    yield "step_3gb_over_12_bytes", denoise.StepRequest(
        inputs=[named("x", tensor.Tensor(dtype=tensor.DTYPE_FLOAT32, shape=[805306368], data=b"\0" * 12))])
    yield "step_negative_dim", denoise.StepRequest(
        inputs=[named("x", tensor.Tensor(dtype=tensor.DTYPE_UINT8, shape=[-2], data=b""))])
    yield "step_overflow_dims", denoise.StepRequest(
        inputs=[named("x", tensor.Tensor(dtype=tensor.DTYPE_FLOAT64, shape=[1 << 40, 1 << 40, 0], data=b""))])
    yield "step_bool_byte_2", denoise.StepRequest(
        inputs=[named("mask", tensor.Tensor(dtype=tensor.DTYPE_BOOL, shape=[2], data=b"\x01\x02"))])
    yield "step_unknown_dtype", denoise.StepRequest(inputs=[named("x", tensor.Tensor(dtype=99, shape=[1], data=b"a"))])
    yield "step_long_name", denoise.StepRequest(inputs=[named("n" * 2000, tensor.Tensor(shape=[1]))])

    yield "decode_valid", pipeline.DecodeRequest(vae="vae", latents=f32([4, 1, 1], [0, 1, 2, 3]))
    yield "decode_nan_f16", pipeline.DecodeRequest(
        vae="vae", latents=tensor.Tensor(dtype=tensor.DTYPE_FLOAT16, shape=[2], data=b"\x00\x3c\x01\x7e"))
    yield "generate_valid", pipeline.GenerateRequest(pipeline="p", prompt="a cat", width=512, height=512, steps=8)
    yield "generate_negative", pipeline.GenerateRequest(pipeline="p", width=-16, height=512, steps=-1)

    yield "load_valid", model.LoadModelRequest(path="a.safetensors", fp8=model.FP8_MODE_E4M3FN, compute_dtype="bfloat16")
    yield "load_dotdot", model.LoadModelRequest(path="../outside/secret")
    yield "load_symlink_escape", model.LoadModelRequest(path="escape/secret", config_path="folder/../../outside")
    yield "load_nul", model.LoadModelRequest(path="a.safetensors\0/../../etc/passwd")
    yield "load_newline", model.LoadModelRequest(path="folder\n/a")
    yield "load_long_component", model.LoadModelRequest(path="folder/" + "c" * 300, compute_dtype="x" * 2000)
    yield "load_bad_fp8", model.LoadModelRequest(path="a.safetensors", fp8=99)
    yield "lease_nan_ttl", model.AcquireLeaseRequest(model_id="m", ttl_seconds=nan)
    yield "make_room_bad_device", cache.MakeRoomRequest(bytes=-1, device="tpu" * 500)


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, message in cases():
        (out / name).write_bytes(message.SerializeToString())


if __name__ == "__main__":
    main()
