"""Imports upstream transformers (a source checkout) on Debian 12's CPU torch 1.13, for the Qwen text
towers the side by side runs (tests/bench/upstream_forward.py).

transformers 4.5x asks for torch >= 2.1 and imports packages torch-only machines lack. On top of
upstream_env's shims (the packages diffusers needs too, SDPA and the torch >= 2 names), it needs:
tokenizers stubbed (the towers' forwards never tokenize), transformers told that torch is available
and that the stubbed packages are not, and a few torch >= 2 APIs its import path and the towers'
forwards reach, each back-filled by its definition. None changes arithmetic; each appends one line to
upstream_env.SHIMS. Nothing of transformers is copied here.
"""

import importlib
import importlib.machinery
import os
import sys
import types

import torch

import upstream_env

# Imported by transformers at module level, never called by the towers' forwards; beside
# upstream_env's list.
_STUBBED = ("tokenizers",)


class _AroundExec:
    """Import hook: runs `pre(module)` and `post(module)` around the real module `name`'s execution."""

    def __init__(self, name, pre=None, post=None):
        self.name, self.pre, self.post = name, pre, post

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None:
            return None
        run, pre, post = spec.loader.exec_module, self.pre, self.post

        def exec_module(module):
            if pre:
                pre(module)
            run(module)
            if post:
                post(module)

        spec.loader.exec_module = exec_module
        return spec


def _backfill_torch2_apis():
    """The torch >= 2 APIs transformers' import path and the towers' forwards reach, by their definitions."""
    import torch.utils._pytree as pytree
    if not hasattr(pytree, "register_pytree_node"):
        pytree.register_pytree_node = (lambda cls, flatten, unflatten, serialized_type_name=None, **kwargs:
                                       pytree._register_pytree_node(cls, flatten, unflatten))
        upstream_env.SHIMS.append("torch.utils._pytree.register_pytree_node -> _register_pytree_node "
                                  "(ModelOutput's registration)")
    if not hasattr(torch, "vmap"):
        import functorch
        torch.vmap = functorch.vmap
        upstream_env.SHIMS.append("torch.vmap -> functorch.vmap (the same function, torch 1.13's home for it; "
                                  "masking_utils builds the causal mask with it)")
    if not hasattr(torch, "_dynamo"):
        torch._dynamo = types.SimpleNamespace(allow_in_graph=lambda fn: fn, is_compiling=lambda: False)
        upstream_env.SHIMS.append("torch._dynamo: allow_in_graph = identity decorator, is_compiling() False")


def import_transformers(src):
    """Imports the real transformers package from `src` (the folder holding transformers/, i.e. a
    checkout's src/) with the shims above. Raises SystemExit when `src` holds no transformers."""
    if not os.path.exists(os.path.join(src, "transformers", "__init__.py")):
        raise SystemExit(f"--transformers {src}: no transformers/__init__.py there (pass a checkout's src/)")
    if "transformers" in sys.modules:
        return sys.modules["transformers"]
    upstream_env._install_shims(only_missing=True, real=("transformers",))
    _backfill_torch2_apis()
    stubbed = tuple(n for n in _STUBBED if not upstream_env._importable(n))
    sys.meta_path.insert(0, upstream_env._StubFinder(stubbed))
    upstream_env.SHIMS.append(f"stubbed modules: {', '.join(stubbed) or 'none'} (transformers imports them, the "
                              f"towers' forwards never call them)")
    absent = [n for n in upstream_env._STUBBED + _STUBBED if n != "transformers" and "." not in n and
              isinstance(sys.modules.get(n) or importlib.import_module(n), upstream_env._StubModule)]

    def report_torch(mod):
        mod._torch_available = True
        for name in absent:  # a stand-in must not pass for the package
            if hasattr(mod, f"_{name}_available"):
                setattr(mod, f"_{name}_available", False)

    sys.meta_path.insert(0, _AroundExec("transformers.utils.import_utils", post=report_torch))
    upstream_env.SHIMS.append("transformers.utils.import_utils: torch reported available (it asks for torch >= "
                              "2.1), the stubbed packages unavailable")
    if "tokenizers" in stubbed:
        # Annotations name tokenizers.Encoding so, bound only where tokenizers is installed.
        sys.meta_path.insert(0, _AroundExec("transformers.tokenization_utils_base", pre=lambda mod: setattr(
            mod, "EncodingFast", type("EncodingFast", (), {}))))
        upstream_env.SHIMS.append("transformers.tokenization_utils_base: EncodingFast bound to an empty class "
                                  "(annotations only)")
    sys.modules["transformers.dependency_versions_check"] = types.SimpleNamespace(
        dep_version_check=lambda *a, **k: None)
    upstream_env.SHIMS.append("transformers.dependency_versions_check -> no-op (pip metadata of stubbed packages)")
    sys.path.insert(0, src)
    return importlib.import_module("transformers")
