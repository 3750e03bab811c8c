"""safetensors reading and writing without the `safetensors` package (not available on Debian's
torch 1.13 stack). Format: 8-byte little-endian header length, a JSON header
{name: {dtype, shape, data_offsets}} (offsets relative to the end of the header), then the data.

Shared by the reference generators in this folder and tests/bench's upstream runner. Reads BF16 / F16
as float32 (exact widenings; `keep_dtype=True` keeps them as stored) and F8_E4M3 / U8 as uint8; writes
F32, BF16 (from values that are already BF16-representable: the low 16 bits must be zero), U8,
F8_E4M3 (uint8 codes) and I64 (token ids). Needs torch and the standard library only (no numpy: a GPU machine's torch
wheel comes without it), on a little-endian host.
"""

import ctypes
import json
import struct
import sys

import torch

_TORCH_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64,
                 "I32": torch.int32, "F64": torch.float64, "F8_E4M3": torch.uint8, "U8": torch.uint8}
if sys.byteorder != "little":
    raise ImportError("safetensors_io reads and writes little-endian data in place: a little-endian host only")


def st_header(path):
    """Returns (header without __metadata__, byte offset of the data)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    return header, 8 + n


def read_safetensors(path, names=None, keep_dtype=False):
    """Yields (name, tensor) in file order, one tensor read at a time so that loading a model costs
    one tensor of extra memory, not a second copy of the file. BF16/F16 come back as float32 (as
    stored with keep_dtype), F8_E4M3 as its uint8 codes."""
    header, base = st_header(path)
    entries = sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0])
    with open(path, "rb") as f:
        for name, e in entries:
            if names is not None and name not in names:
                continue
            begin, end = e["data_offsets"]
            f.seek(base + begin)
            if e["dtype"] not in _TORCH_DTYPES:
                raise ValueError(f"{path}: {name}: unsupported dtype {e['dtype']}")
            raw = bytearray(end - begin)  # writable, so the tensor below owns it without a copy
            if f.readinto(raw) != len(raw):
                raise ValueError(f"{path}: {name}: the file ends inside the tensor")
            dtype = _TORCH_DTYPES[e["dtype"]]
            value = (torch.frombuffer(raw, dtype=dtype) if raw else torch.empty([0], dtype=dtype)).reshape(e["shape"])
            if not keep_dtype and dtype in (torch.bfloat16, torch.float16):
                value = value.float()
            yield name, value


def read_safetensors_into(path, targets):
    """Reads each tensor of `path` named in `targets` (name -> a contiguous CPU tensor of its shape)
    into that tensor: straight into its memory where the file holds its dtype, so that filling a model
    costs no second copy of its largest tensor; else through read_safetensors' value. Returns the names
    read."""
    header, base = st_header(path)
    done = set()
    with open(path, "rb") as f:
        for name, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
            target = targets.get(name)
            if target is None or _TORCH_DTYPES.get(e["dtype"]) != target.dtype or e["dtype"] == "F8_E4M3":
                continue
            if list(target.shape) != e["shape"] or not target.is_contiguous():
                raise ValueError(f"{path}: {name}: {e['shape']} in the file, {list(target.shape)} given")
            begin, end = e["data_offsets"]
            f.seek(base + begin)
            memory = (ctypes.c_char * (end - begin)).from_address(target.data_ptr())
            if end > begin and f.readinto(memory) != end - begin:
                raise ValueError(f"{path}: {name}: the file ends inside the tensor")
            done.add(name)
    rest = {n for n in targets if n in header} - done
    for name, value in read_safetensors(path, names=rest, keep_dtype=True):
        if targets[name].shape != value.shape:
            raise ValueError(f"{path}: {name}: {list(value.shape)} in the file, {list(targets[name].shape)} given")
        with torch.no_grad():
            targets[name].copy_(value)
    return done | rest


def _bytes(value):
    value = value.detach().cpu().contiguous()
    return ctypes.string_at(value.data_ptr(), value.numel() * value.element_size()) if value.numel() else b""


def _encode(name, value, dtype):
    if dtype == "I64":
        if value.dtype != torch.int64:
            raise ValueError(f"{name}: I64 takes int64 values, got {value.dtype}")
        return _bytes(value)
    if dtype in ("F8_E4M3", "U8"):
        if value.dtype != torch.uint8:
            raise ValueError(f"{name}: {dtype} takes uint8 values, got {value.dtype}")
        return _bytes(value)
    data = value.detach().to(torch.float32)
    if dtype == "F32":
        return _bytes(data)
    if dtype == "BF16":
        if bool((data.contiguous().view(torch.int32) & 0xFFFF).any()):
            raise ValueError(f"{name}: not BF16-representable (round the values first)")
        return _bytes(data.to(torch.bfloat16))
    raise ValueError(f"{name}: cannot write dtype {dtype}")


def write_safetensors(path, tensors, dtypes=None):
    """Writes name -> tensor to `path` in sorted key order, each as dtypes.get(name) (default U8 for uint8
    tensors, I64 for int64 ones, else F32), with
    __metadata__ {"format": "pt"}. Raises ValueError for a value its dtype cannot hold exactly."""
    dtypes = dtypes or {}
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        default = {torch.uint8: "U8", torch.int64: "I64"}.get(tensors[name].dtype, "F32")
        dtype = dtypes.get(name, default)
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
