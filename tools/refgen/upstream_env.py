"""Runs upstream diffusers (a source checkout) on Debian 12's CPU torch 1.13.

diffusers needs torch >= 2 and a dozen packages that torch-only machines lack. `import_diffusers`
installs the shims below, then imports the real `diffusers` package from a source tree; nothing of
diffusers is copied here. No shim touches arithmetic that the reference outputs depend on: each one
either stands in for a package the generators never reach (images, hub downloads, accelerate,
distributed tensors), or supplies a torch >= 2 function with its documented definition (SDPA,
nn.RMSNorm). `SHIMS` lists them, in words, for the fixtures' READMEs.

Also here: `sdpa_reference`, which tests/bench's upstream runner installs for the same reason.
"""

import functools
import importlib
import importlib.machinery
import inspect
import math
import os
import re
import sys
import tempfile
import textwrap
import types

import torch
import torch.nn as nn
import torch.nn.functional as F

SHIMS = []


def sdpa_reference(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                   enable_gqa=False):
    """F.scaled_dot_product_attention's definition, for torch < 2.0 which lacks it:
    softmax(Q Kᵀ · scale + mask) V on [B, H, S, D], scale defaulting to 1/sqrt(D); a bool mask is True
    where a key takes part (False -> -inf), a float mask is added. A fully masked query row gives NaN
    as in torch's math backend. Computes in the inputs' dtype (the references run fp32 and fp64).
    enable_gqa: key / value heads are repeated (each consecutively) up to the query's head count."""
    if dropout_p or is_causal:
        raise NotImplementedError("dropout / causal attention are not used by the reference models")
    if enable_gqa and key.size(-3) != query.size(-3):
        key = key.repeat_interleave(query.size(-3) // key.size(-3), dim=-3)
        value = value.repeat_interleave(query.size(-3) // value.size(-3), dim=-3)
    scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    scores = torch.matmul(query, key.transpose(-2, -1)).mul_(scale)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores.masked_fill_(~attn_mask, float("-inf"))
        else:
            scores += attn_mask
    return torch.matmul(torch.softmax(scores, dim=-1), value)


class TorchRMSNorm(nn.Module):
    """torch.nn.RMSNorm (torch >= 2.4): x * rsqrt(mean(x², last dims) + eps) * weight, eps None meaning
    finfo(x.dtype).eps; fp16 / bf16 inputs are normalised in fp32 and cast back."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.weight = (nn.Parameter(torch.ones(self.normalized_shape, device=device, dtype=dtype))
                       if elementwise_affine else None)

    def forward(self, x):
        dims = tuple(range(-len(self.normalized_shape), 0))
        xf = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
        eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
        y = xf * torch.rsqrt(xf.pow(2).mean(dims, keepdim=True) + eps)
        if self.weight is not None:
            y = y * self.weight.to(y.dtype)
        return y.to(x.dtype)


@functools.total_ordering
class Version:
    """packaging.version.Version for the version strings diffusers compares (N.N.N with an optional
    aN / bN / rcN / .devN / .postN tail)."""

    _TAILS = {".dev": -4, "a": -3, "b": -2, "rc": -1, None: 0, ".post": 1}

    def __init__(self, text):
        self.text = str(text)
        m = re.match(r"v?(\d+(?:\.\d+)*)(\.dev|a|b|rc|\.post)?(\d+)?", self.text)
        if not m:
            raise ValueError(f"Invalid version: {text!r}")
        self.release = tuple(int(p) for p in m.group(1).split("."))
        padded = (self.release + (0, 0, 0, 0))[:4]
        self._key = (padded, self._TAILS[m.group(2)], int(m.group(3) or 0))
        self.major, self.minor, self.micro = (self.release + (0, 0, 0))[:3]
        self.base_version = ".".join(map(str, self.release))
        self.is_prerelease = self._key[1] < 0
        self.is_devrelease = self._key[1] == -4

    def __eq__(self, other):
        return self._key == _as_version(other)._key

    def __lt__(self, other):
        return self._key < _as_version(other)._key

    def __hash__(self):
        return hash(self._key)

    def __str__(self):
        return self.text


def _as_version(v):
    return v if isinstance(v, Version) else Version(v)


class _QuietProgress:
    """tqdm stand-in: iterates / counts silently (progress bars only)."""

    def __init__(self, iterable=None, *args, **kwargs):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n=1):
        pass

    def close(self):
        pass


class _StandIn(type):
    """Classes of a stubbed package: any attribute is another stand-in class (PIL.Image.Resampling
    .BILINEAR, transformers.CLIPTextModel ...), constructible and inert. Reaching one in the
    generators' code paths would be a bug; they are only named in signatures and type hints."""

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _StandIn(name, (), {"__init__": lambda self, *a, **k: None})


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _StandIn(name, (), {"__init__": lambda self, *a, **k: None})
        setattr(self, name, value)
        return value


_STUBBED = ("PIL", "accelerate", "filelock", "httpx", "huggingface_hub", "safetensors", "tqdm",
            "transformers", "torch.distributed._functional_collectives", "torch.distributed.device_mesh",
            "torch.distributed.tensor", "torch.nn.attention")
_STUB_ATTRS = {
    "PIL": {"__version__": "10.0.0"},
    "huggingface_hub.constants": {"HF_HOME": os.path.join(os.sep, "nonexistent", "hf-home")},
    "tqdm": {"tqdm": _QuietProgress},
    "tqdm.auto": {"tqdm": _QuietProgress},
}


class _StubFinder:
    """Import hook: every module under one of `names` is an inert _StubModule."""

    def __init__(self, names):
        self.names = tuple(names)

    def find_spec(self, name, path=None, target=None):
        if any(name == s or name.startswith(s + ".") for s in self.names):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        module.__dict__.update(_STUB_ATTRS.get(spec.name, {}))
        return module

    def exec_module(self, module):
        pass


class _NoOpNamespace(types.ModuleType):
    """torch.xpu / torch.mps on torch 1.13: every function returns 0 (no device, nothing to do)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *a, **k: 0


class _DtypePlaceholder:
    """A float8 dtype torch 1.13 lacks: diffusers only lists it in tables at import time."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name} (placeholder)"


def _importable(name):
    """Whether the real module `name` imports (tried, since an installed package may still fail)."""
    try:
        importlib.import_module(name)
        return True
    except ImportError:
        return False


def _install_shims(only_missing, real=()):
    """Installs the shims above once; `real` names packages of the stub list that are imported for real
    (upstream_transformers.py: transformers itself)."""
    if any("packaging.version -> minimal Version" == s for s in SHIMS):
        return
    pkg = types.ModuleType("packaging")
    pkg.__path__ = []
    pkg.version = types.ModuleType("packaging.version")
    pkg.version.__dict__.update(Version=Version, parse=Version, InvalidVersion=ValueError)
    sys.modules.update({"packaging": pkg, "packaging.version": pkg.version})
    SHIMS.append("packaging.version -> minimal Version")

    stubbed = _STUBBED
    if only_missing:
        # A newer torch has the torch.* modules, and a GPU machine's Python may lack numpy, which
        # diffusers imports everywhere but the transformers' forwards do not call.
        stubbed = tuple(name for name in _STUBBED + ("numpy",) if not _importable(name))
    stubbed = tuple(name for name in stubbed if name not in real)
    sys.meta_path.insert(0, _StubFinder(stubbed))
    for name in stubbed:
        if name.startswith("torch."):  # diffusers reads them as attributes of torch.distributed / torch.nn
            importlib.import_module(name)
    SHIMS.append("stubbed modules: " + ", ".join(sorted(stubbed)) + " (tqdm's bar is a silent iterator)")

    for name in ("float8_e4m3fn", "float8_e5m2"):
        if not hasattr(torch, name):
            setattr(torch, name, _DtypePlaceholder(name))
    SHIMS.append("torch.float8_e4m3fn / float8_e5m2 placeholders")
    for name in ("xpu", "mps"):
        if not hasattr(torch, name):
            setattr(torch, name, _NoOpNamespace("torch." + name))
            SHIMS.append(f"torch.{name} no-op namespace")
    if not hasattr(torch, "compiler"):
        torch.compiler = _NoOpNamespace("torch.compiler")
        torch.compiler.disable = lambda fn=None, *a, **k: fn if callable(fn) else (lambda f: f)
        torch.compiler.is_compiling = lambda: False
        SHIMS.append("torch.compiler no-op namespace (disable = identity decorator)")
    if not hasattr(F, "scaled_dot_product_attention"):
        F.scaled_dot_product_attention = sdpa_reference
        SHIMS.append("F.scaled_dot_product_attention -> sdpa_reference (math, in the inputs' dtype)")
    if not hasattr(nn, "RMSNorm"):
        nn.RMSNorm = TorchRMSNorm
        SHIMS.append("torch.nn.RMSNorm -> TorchRMSNorm (torch>=2.4 semantics: x * rsqrt(mean(x^2) + eps) "
                     "* weight, fp16/bf16 upcast to fp32)")
    # Checks that filelock / requests are installed at import time; both are stubbed or unused here.
    sys.modules["diffusers.dependency_versions_check"] = types.SimpleNamespace(
        dep_version_check=lambda *a, **k: None)
    SHIMS.append("diffusers.dependency_versions_check -> no-op (installed-version check of stubbed packages)")


def fix_z_image_for_torch1(zi):
    """Makes upstream's transformer_z_image module `zi` run on torch < 2, same values:
    - RopeEmbedder.precompute_freqs_cis wraps its body in `with torch.device("cpu"):` (a default-device
      context, torch >= 2.0 only). Every tensor it makes already passes device="cpu" explicitly or
      inherits it from one that does, so the method is recompiled from upstream's source with that
      context replaced by a no-op.
    - RopeEmbedder indexes its tables with int32 position ids; torch < 2 only indexes with int64.
      Widening the ids keeps every value, so the gathered rows are the same."""
    if hasattr(torch.device, "__enter__") or getattr(zi.RopeEmbedder, "_torch1_fixed", False):
        return
    source = textwrap.dedent(inspect.getsource(zi.RopeEmbedder.precompute_freqs_cis))
    needle = 'with torch.device("cpu"):'
    if source.count(needle) != 1:
        raise RuntimeError(f"RopeEmbedder.precompute_freqs_cis: expected one `{needle}`, found {source.count(needle)}")
    source = source.replace(needle, 'with __import__("contextlib").nullcontext():')
    source = "\n".join(line for line in source.splitlines() if not line.startswith("@staticmethod"))
    scope = dict(zi.__dict__)
    exec(compile(source, zi.__file__, "exec"), scope)
    zi.RopeEmbedder.precompute_freqs_cis = staticmethod(scope["precompute_freqs_cis"])
    rope_call = zi.RopeEmbedder.__call__
    zi.RopeEmbedder.__call__ = lambda self, ids: rope_call(self, ids.long())
    zi.RopeEmbedder._torch1_fixed = True
    SHIMS.append("transformer_z_image: `with torch.device('cpu')` -> no-op context (all tensors there are CPU)")
    SHIMS.append("RopeEmbedder.__call__: int32 position ids -> int64 before indexing (same values)")


def fix_cosmos_without_torchvision(cosmos):
    """transformer_cosmos resizes its padding mask with torchvision's tensor resize, importing torchvision
    only where it is installed. Without it, `transforms.functional.resize(mask, size, NEAREST)` is
    restated by its definition for a float tensor: F.interpolate(mode="nearest")."""
    if hasattr(cosmos, "transforms"):
        return
    def resize(image, size, interpolation=None):
        return F.interpolate(image, size=list(size), mode="nearest")
    cosmos.transforms = types.SimpleNamespace(functional=types.SimpleNamespace(resize=resize),
                                              InterpolationMode=types.SimpleNamespace(NEAREST="nearest"))
    SHIMS.append("transformer_cosmos.transforms (torchvision, absent) -> its tensor resize, F.interpolate "
                 "(mode='nearest'), for the padding mask")


def _openblas():
    """The OpenBLAS this process has loaded, as a ctypes library, or None."""
    import ctypes
    with open("/proc/self/maps") as f:
        libs = sorted({line.split()[-1] for line in f if "blas" in line.split()[-1]})
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if hasattr(lib, "openblas_get_corename"):  # not another BLAS
            return lib
    return None


def limit_openblas_threads(n):
    """torch.set_num_threads sets OpenMP's pool, but a pthreads OpenBLAS (Debian's default, which runs
    torch 1.13's CPU matmuls) keeps one worker per core regardless. Tell it `n` too, through its own
    API, so that the thread count holds for the GEMMs (and results do not depend on the core count);
    the environment is left alone. Returns the library told, or None."""
    import ctypes
    lib = _openblas()
    if lib is None:
        return None
    lib.openblas_set_num_threads(ctypes.c_int(n))
    return lib._name


def cpu_kernels(dtype):
    """What this process's torch runs on the CPU, for a report: {"blas": OpenBLAS's kernel set
    (openblas_get_corename), "onednn": oneDNN's ISA and the kernel a `dtype` linear gets, as
    ONEDNN_VERBOSE prints them}, None where a library is absent. The oneDNN part runs one small
    linear with oneDNN's verbose mode on and reads what it printed to the process's stdout."""
    import ctypes
    report = {"blas": None, "onednn": None}
    lib = _openblas()
    if lib is not None:
        lib.openblas_get_corename.restype = lib.openblas_get_config.restype = ctypes.c_char_p
        version = " ".join(lib.openblas_get_config().decode().split()[:2])  # "OpenBLAS 0.3.21"
        report["blas"] = f"{version}, {lib.openblas_get_corename().decode()} kernels"
    mkldnn = getattr(torch.backends, "mkldnn", None)
    if mkldnn is None or not mkldnn.is_available() or not hasattr(mkldnn, "verbose"):
        return report
    x, w = torch.randn(128, 256).to(dtype), torch.randn(256, 256).to(dtype)
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+") as out:
        os.dup2(out.fileno(), 1)
        try:
            with mkldnn.verbose(mkldnn.VERBOSE_ON):
                torch.nn.functional.linear(x, w)
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
        out.seek(0)
        printed = out.read()
    isa = re.search(r"verbose,info,cpu,isa:([^\n]*)", printed)
    kernels = sorted({f"{m.group(1)} {m.group(2)}" for m in
                      re.finditer(r"verbose,exec,cpu,(matmul|inner_product|convolution),([^,]+)", printed)})
    if isa or kernels:
        report["onednn"] = "oneDNN: " + ", ".join(([isa.group(1)] if isa else []) + kernels)
    return report


def import_diffusers(src, only_missing=False):
    """Imports the real diffusers package from `src` (the folder holding diffusers/, i.e. a checkout's
    src/) with the shims above. With `only_missing`, a package of the stub list is stubbed only where
    it cannot be imported (the benchmarks, on any torch); without it always (the reference generators,
    whose recorded shim lists stay as they were). Raises SystemExit when `src` holds no diffusers."""
    if not os.path.exists(os.path.join(src, "diffusers", "__init__.py")):
        raise SystemExit(f"--diffusers {src}: no diffusers/__init__.py there (pass a checkout's src/)")
    if "diffusers" in sys.modules:
        return sys.modules["diffusers"]
    _install_shims(only_missing)
    sys.path.insert(0, src)
    diffusers = importlib.import_module("diffusers")
    diffusers.utils.logging.set_verbosity_error()  # e.g. the "kept in float32: []" note on every .to()
    return diffusers


def add_empty_loader_mixins(*names):
    """diffusers.loaders defines its LoRA / IP-adapter / single-file / textual-inversion mixins only
    when transformers is installed; pipelines inherit them for loading methods the generators never
    call. Installs each missing one as an empty class."""
    loaders = importlib.import_module("diffusers.loaders")
    for name in names:
        if not hasattr(loaders, name) or name not in loaders.__dict__:
            setattr(loaders, name, type(name, (), {}))
            SHIMS.append(f"diffusers.loaders.{name} -> empty mixin")
