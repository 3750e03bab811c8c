"""A tiny pure-Python .safetensors writer and reader (float32 and friends).

Format: an 8-byte little-endian header length, a JSON header mapping each
tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets
relative to the end of the header), then the tensors' bytes.
"""

import json
import struct

import diffusiond_client as dc

_TO_SAFETENSORS = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64", "int64": "I64",
                   "int32": "I32", "uint8": "U8", "bool": "BOOL"}
_FROM_SAFETENSORS = {v: k for k, v in _TO_SAFETENSORS.items()}


def write(path, tensors):
    """Writes ``tensors`` (name -> WireTensor) to ``path``."""
    header, offset = {}, 0
    for name, t in tensors.items():
        header[name] = {"dtype": _TO_SAFETENSORS[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + t.nbytes]}
        offset += t.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the format pads the header to 8 bytes
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for t in tensors.values():
            f.write(t.data)


def read_header(path):
    """Returns the header of ``path``: name -> {"dtype", "shape", "data_offsets"}, without the metadata."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    return header


def read(path):
    """Returns the tensors of ``path`` as name -> WireTensor, in file order."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    header.pop("__metadata__", None)
    body = blob[8 + n:]
    out = {}
    for name, entry in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        begin, end = entry["data_offsets"]
        out[name] = dc.WireTensor(_FROM_SAFETENSORS[entry["dtype"]], tuple(entry["shape"]), body[begin:end])
    return out
