"""safetensors reading and writing without the `safetensors` package (not available on Debian's
torch 1.13 stack). Format: 8-byte little-endian header length, a JSON header
{name: {dtype, shape, data_offsets}} (offsets relative to the end of the header), then the data.

Shared by the reference generators in this folder and tests/bench's upstream runners. Reads BF16 / F16
as float32 (exact widenings) and F8_E4M3 / U8 as uint8; writes F32, BF16 (from values that are
already BF16-representable: the low 16 bits must be zero), U8 and F8_E4M3 (uint8 codes).
"""

import json
import struct

import numpy as np
import torch

_NP_DTYPES = {"F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "F64": "<f8", "F8_E4M3": "u1", "U8": "u1"}


def st_header(path):
    """Returns (header without __metadata__, byte offset of the data)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    return header, 8 + n


def read_safetensors(path, names=None):
    """Yields (name, tensor) in file order, one tensor read at a time so that loading a model costs
    one tensor of extra memory, not a second copy of the file. BF16/F16 come back as float32, F8_E4M3
    as its uint8 codes."""
    header, base = st_header(path)
    entries = sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0])
    with open(path, "rb") as f:
        for name, e in entries:
            if names is not None and name not in names:
                continue
            begin, end = e["data_offsets"]
            f.seek(base + begin)
            raw = f.read(end - begin)
            if e["dtype"] == "BF16":  # bf16 is the top half of a float32
                arr = (np.frombuffer(raw, "<u2").astype("<u4") << 16).view("<f4")
            elif e["dtype"] in _NP_DTYPES:
                arr = np.frombuffer(raw, _NP_DTYPES[e["dtype"]])
                arr = arr.astype("<f4") if e["dtype"] == "F16" else arr.copy()
            else:
                raise ValueError(f"{path}: {name}: unsupported dtype {e['dtype']}")
            yield name, torch.from_numpy(arr.reshape(e["shape"]))


def _encode(name, value, dtype):
    if dtype in ("F8_E4M3", "U8"):
        if value.dtype != torch.uint8:
            raise ValueError(f"{name}: {dtype} takes uint8 values, got {value.dtype}")
        return value.contiguous().numpy().tobytes()
    data = value.detach().to(torch.float32).contiguous().numpy().astype("<f4")
    if dtype == "F32":
        return data.tobytes()
    if dtype == "BF16":
        bits = data.view("<u4")
        if np.any(bits & 0xFFFF):
            raise ValueError(f"{name}: not BF16-representable (round the values first)")
        return (bits >> 16).astype("<u2").tobytes()
    raise ValueError(f"{name}: cannot write dtype {dtype}")


def write_safetensors(path, tensors, dtypes=None):
    """Writes name -> tensor to `path` in sorted key order, each as dtypes.get(name) (default U8 for uint8
    tensors, else F32), with
    __metadata__ {"format": "pt"}. Raises ValueError for a value its dtype cannot hold exactly."""
    dtypes = dtypes or {}
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        dtype = dtypes.get(name, "U8" if tensors[name].dtype == torch.uint8 else "F32")
        data = _encode(name, tensors[name], dtype)
        header[name] = {"dtype": dtype, "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the format pads the header to 8 bytes
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for b in blobs:
            f.write(b)
