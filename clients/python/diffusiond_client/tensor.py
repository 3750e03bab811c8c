"""WireTensor: a dense tensor as diffusiond.v1.Tensor carries it.

A WireTensor is a dtype name ("float32", "bfloat16", ...), a shape and the
elements as little-endian row-major bytes. It needs nothing beyond the
standard library: build one from an ``array.array`` or a list of floats and
read it back as an ``array.array`` or a list. Conversion from and to numpy
arrays and torch tensors is offered when those packages import; they are
never imported otherwise.

The constructor checks that the byte count matches the shape and dtype, so a
WireTensor is always well formed. To send a malformed tensor on purpose
(tests), pass a ``tensor_pb2.Tensor`` message instead: the client forwards
messages unchanged.
"""

import array
import dataclasses
import math
import struct
import sys
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

from . import _stubs

_pb = _stubs.tensor_pb2


@dataclasses.dataclass(frozen=True)
class _DType:
    name: str
    enum: int
    itemsize: int
    typecode: str  # array.array typecode; "" when array has none
    numpy_name: str  # numpy dtype name; "" when numpy has none


def _typecode(candidates: str, itemsize: int) -> str:
    for code in candidates:
        if array.array(code).itemsize == itemsize:
            return code
    return ""


_DTYPES = {
    d.name: d
    for d in (
        _DType("float32", _pb.DTYPE_FLOAT32, 4, "f", "float32"),
        _DType("float16", _pb.DTYPE_FLOAT16, 2, "", "float16"),
        _DType("bfloat16", _pb.DTYPE_BFLOAT16, 2, "", ""),
        _DType("float64", _pb.DTYPE_FLOAT64, 8, "d", "float64"),
        _DType("int64", _pb.DTYPE_INT64, 8, _typecode("qlL", 8), "int64"),
        _DType("int32", _pb.DTYPE_INT32, 4, _typecode("il", 4), "int32"),
        _DType("uint8", _pb.DTYPE_UINT8, 1, "B", "uint8"),
        _DType("bool", _pb.DTYPE_BOOL, 1, "B", "bool"),
    )
}
_BY_ENUM = {d.enum: d for d in _DTYPES.values()}
_BY_TYPECODE = {"f": "float32", "d": "float64", "B": "uint8"}
for _code in "bhilq":
    if array.array(_code).itemsize in (4, 8):
        _BY_TYPECODE.setdefault(_code, "int32" if array.array(_code).itemsize == 4 else "int64")

DTYPE_NAMES = tuple(_DTYPES)


def _dtype(name: str) -> _DType:
    d = _DTYPES.get(name)
    if d is None:
        raise ValueError(f"dtype '{name}' is not one of {', '.join(_DTYPES)}")
    return d


def _numel(shape: Iterable[int]) -> int:
    return math.prod(shape)


@dataclasses.dataclass(frozen=True)
class WireTensor:
    """A dense tensor: dtype name, shape and little-endian row-major bytes.

    Raises ValueError from the constructor for an unknown dtype, a negative
    dimension, or ``len(data) != prod(shape) * itemsize``.
    """

    dtype: str
    shape: Tuple[int, ...]
    data: bytes

    def __post_init__(self) -> None:
        d = _dtype(self.dtype)
        shape = tuple(int(s) for s in self.shape)
        if any(s < 0 for s in shape):
            raise ValueError(f"shape {list(shape)} has a negative dimension")
        data = bytes(self.data)
        expected = _numel(shape) * d.itemsize
        if len(data) != expected:
            raise ValueError(
                f"{self.dtype} tensor of shape {list(shape)} needs {expected} bytes, got {len(data)}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "data", data)

    def __repr__(self) -> str:
        return f"WireTensor(dtype={self.dtype!r}, shape={list(self.shape)}, nbytes={len(self.data)})"

    @property
    def numel(self) -> int:
        return _numel(self.shape)

    @property
    def nbytes(self) -> int:
        return len(self.data)

    # --- standard library -------------------------------------------------

    @classmethod
    def from_array(cls, values: "array.array[Any]", shape: Optional[Sequence[int]] = None,
                   dtype: Optional[str] = None) -> "WireTensor":
        """Returns a tensor holding an ``array.array``'s elements.

        ``shape`` defaults to ``[len(values)]``; ``dtype`` defaults from the
        typecode ('f' float32, 'd' float64, 'B' uint8, 4/8-byte ints int32/int64).
        """
        if dtype is None:
            dtype = _BY_TYPECODE.get(values.typecode)
            if dtype is None:
                raise ValueError(f"array typecode '{values.typecode}' has no wire dtype; pass dtype=")
        d = _dtype(dtype)
        if values.itemsize != d.itemsize:
            raise ValueError(f"array typecode '{values.typecode}' is {values.itemsize} bytes, {dtype} is {d.itemsize}")
        if sys.byteorder != "little":
            values = array.array(values.typecode, values)
            values.byteswap()
        return cls(dtype, tuple(shape) if shape is not None else (len(values),), values.tobytes())

    @classmethod
    def from_floats(cls, values: Iterable[float], shape: Optional[Sequence[int]] = None) -> "WireTensor":
        """Returns a float32 tensor of ``values`` (any iterable of numbers)."""
        return cls.from_array(array.array("f", values), shape, "float32")

    @classmethod
    def zeros(cls, shape: Sequence[int], dtype: str = "float32") -> "WireTensor":
        """Returns a tensor of zeros."""
        return cls(dtype, tuple(shape), bytes(_numel(shape) * _dtype(dtype).itemsize))

    def to_array(self) -> "array.array[Any]":
        """Returns the elements as a flat ``array.array`` in native byte order.

        Raises ValueError for float16/bfloat16, which array cannot hold; use
        to_list() for those.
        """
        d = _dtype(self.dtype)
        if not d.typecode:
            raise ValueError(f"array.array cannot hold {self.dtype}; use to_list()")
        out = array.array(d.typecode)
        out.frombytes(self.data)
        if sys.byteorder != "little":
            out.byteswap()
        return out

    def to_list(self) -> List[Any]:
        """Returns the elements as a flat list of Python numbers (any dtype)."""
        n = self.numel
        if self.dtype == "float16":
            return list(struct.unpack(f"<{n}e", self.data))
        if self.dtype == "bfloat16":
            halves = struct.unpack(f"<{n}H", self.data)
            return list(struct.unpack(f"<{n}f", struct.pack(f"<{n}I", *(h << 16 for h in halves))))
        if self.dtype == "bool":
            return [b != 0 for b in self.data]
        return self.to_array().tolist()

    # --- protobuf -----------------------------------------------------------

    @classmethod
    def from_proto(cls, message: Any) -> "WireTensor":
        """Returns the tensor a diffusiond.v1.Tensor holds; ValueError if malformed."""
        d = _BY_ENUM.get(message.dtype)
        if d is None:
            raise ValueError(f"wire dtype enum {message.dtype} is unknown")
        return cls(d.name, tuple(message.shape), message.data)

    def to_proto(self) -> Any:
        """Returns a new diffusiond.v1.Tensor message."""
        return _pb.Tensor(dtype=_dtype(self.dtype).enum, shape=list(self.shape), data=self.data)

    # --- numpy and torch, when installed ----------------------------------

    @classmethod
    def from_numpy(cls, ndarray: Any) -> "WireTensor":
        """Returns a copy of a numpy array (any layout; bfloat16 unsupported).

        Raises ImportError without numpy.
        """
        import numpy as np

        name = np.dtype(ndarray.dtype).name
        if name not in _DTYPES or not _DTYPES[name].numpy_name:
            raise ValueError(f"numpy dtype {name} has no wire dtype")
        little = np.ascontiguousarray(ndarray, dtype=np.dtype(name).newbyteorder("<"))
        return cls(name, tuple(ndarray.shape), little.tobytes())

    def to_numpy(self) -> Any:
        """Returns a writable numpy array (bfloat16 is widened to float32)."""
        import numpy as np

        if self.dtype == "bfloat16":
            halves = np.frombuffer(self.data, dtype="<u2").astype(np.uint32) << 16
            return halves.view(np.float32).reshape(self.shape).copy()
        d = _dtype(self.dtype)
        return np.frombuffer(self.data, dtype=np.dtype(d.numpy_name).newbyteorder("<")).astype(
            d.numpy_name).reshape(self.shape)

    @classmethod
    def from_torch(cls, tensor: Any) -> "WireTensor":
        """Returns a copy of a torch tensor (moved to the CPU; bfloat16 kept)."""
        import torch

        t = tensor.detach().to("cpu").contiguous()
        if t.dtype == torch.bfloat16:
            raw = t.view(torch.int16).numpy().astype("<i2").tobytes()
            return cls("bfloat16", tuple(t.shape), raw)
        return cls.from_numpy(t.numpy())

    def to_torch(self) -> Any:
        """Returns a torch tensor on the CPU with this dtype."""
        import torch

        if self.dtype == "bfloat16":
            import numpy as np

            raw = np.frombuffer(self.data, dtype="<i2").astype(np.int16).reshape(self.shape)
            return torch.from_numpy(raw.copy()).view(torch.bfloat16)
        return torch.from_numpy(self.to_numpy().copy())


TensorLike = Union[WireTensor, Any]
"""A WireTensor, a diffusiond.v1.Tensor message, a numpy array or a torch tensor
(numpy and torch have no types here, hence Any)."""


def to_wire_proto(value: TensorLike) -> Any:
    """Returns a diffusiond.v1.Tensor for a WireTensor, a Tensor message
    (forwarded unchanged, even if malformed), a numpy array or a torch tensor.
    """
    if isinstance(value, _pb.Tensor):
        return value
    if isinstance(value, WireTensor):
        return value.to_proto()
    module = type(value).__module__.split(".")[0]
    if module == "numpy":
        return WireTensor.from_numpy(value).to_proto()
    if module == "torch":
        return WireTensor.from_torch(value).to_proto()
    raise TypeError(f"{type(value).__name__} is not a tensor (WireTensor, diffusiond.v1.Tensor, numpy, torch)")
