"""modelzoo port's custom-op routes (``--op``), beside its shim ``sitecustomize.py``, which
imports this module only when ``MODELZOO_PORT_OPS`` or ``MODELZOO_PORT_OP_STUBS`` is set (see the
shim's docstring for the variables)."""

import atexit
import importlib.abc
import importlib.util
import json
import os
import sys
def _rank():
    return os.environ.get("RANK", "0")


class _OpRoutes(importlib.abc.MetaPathFinder):
    """``MODELZOO_PORT_OPS`` / ``MODELZOO_PORT_OP_STUBS``: routes custom autograd Functions to
    another implementation as their modules load, and stands in for extensions not built here."""

    def __init__(self, routes, stubs, record_dir, float64=False):
        # Class or module:Class -> "module:function"
        self.routes = routes
        self.float64 = float64
        self.stubs = set(stubs)
        self.calls = {}
        self.impls = {}
        self.record_dir = record_dir
        self._busy = set()
        if record_dir:
            atexit.register(self.record)

    def find_spec(self, name, path=None, target=None):
        if name in self._busy:
            return None
        self._busy.add(name)
        try:
            spec = importlib.util.find_spec(name) if "." not in name else self._find(name, path)
        except (ImportError, ValueError):
            spec = None
        finally:
            self._busy.discard(name)
        if spec is None:
            if name in self.stubs:
                return importlib.util.spec_from_loader(name, _StubLoader())
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_route(module):
            exec_module(module)
            self.route(module)

        spec.loader.exec_module = exec_then_route
        return spec

    def _find(self, name, path):
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path)
            if spec is not None:
                return spec
        return None

    def route(self, module):
        for key, impl in self.routes.items():
            mod, _, cls_name = key.rpartition(":")
            if mod and mod != module.__name__:
                continue
            cls = module.__dict__.get(cls_name)
            if not isinstance(cls, type) or cls.__module__ != module.__name__:
                continue
            if not any(b.__name__ == "Function" for b in cls.__mro__[1:]):
                continue
            cls.apply = staticmethod(self._routed(cls_name, cls, impl))

    def _routed(self, name, cls, impl):
        import inspect

        try:
            forward = list(inspect.signature(cls.forward).parameters)[1:]  # without ctx
        except (TypeError, ValueError):
            forward = []
        self.calls.setdefault(name, {"impl": impl, "calls": 0})
        if self.float64:
            self.calls[name]["float64"] = True

        def apply(*args, **kwargs):
            fn = self._impl(impl)
            if self.float64:
                fn = _in_float64(fn)
            self.calls[name]["calls"] += 1
            bound = dict(zip(forward, args), **kwargs)
            params = inspect.signature(fn).parameters.values()
            required = [p.name for p in params
                        if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
            if required and all(r in bound for r in required):
                accepted = {p.name for p in params}
                return fn(**{k: v for k, v in bound.items() if k in accepted})
            positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            if any(p.kind == p.VAR_POSITIONAL for p in params):
                return fn(*args, **kwargs)
            return fn(*args[:len(positional)])

        apply.__name__ = f"{name}.apply (routed to {impl} by modelzoo port --op)"
        return apply

    def _impl(self, target):
        fn = self.impls.get(target)
        if fn is None:
            import importlib

            mod, _, attr = target.partition(":")
            try:
                fn = getattr(importlib.import_module(mod), attr)
            except (ImportError, AttributeError) as e:
                raise RuntimeError(f"modelzoo port --op: cannot load {target}: {e}") from e
            self.impls[target] = fn
        return fn

    def record(self):
        try:
            os.makedirs(self.record_dir, exist_ok=True)
            path = os.path.join(self.record_dir, f"ops.rank{_rank()}.json")
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                json.dump(self.calls, f)
            os.replace(path + ".tmp", path)
        except OSError as e:
            print(f"modelzoo port: cannot record the routed ops into {self.record_dir}: {e}",
                  file=sys.stderr)


def _in_float64(fn):
    """``MODELZOO_PORT_OPS_FLOAT64=1`` (the original's second run): the routed implementation runs
    on float64 copies of its floating tensor arguments and its floating results are cast back to
    the arguments' dtype — the same op with other rounding. The spread of the original's two runs
    then measures how far the model's loss moves when only the op's rounding changes, which is
    what a port running another implementation of the op (``--op``) may differ by."""
    import functools

    import torch

    def up(a):
        return a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a

    @functools.wraps(fn)
    def call(*args, **kwargs):
        floating = [a for a in (*args, *kwargs.values())
                    if isinstance(a, torch.Tensor) and a.is_floating_point()]
        if not floating or floating[0].dtype == torch.float64:
            return fn(*args, **kwargs)
        dtype = floating[0].dtype

        def down(o):
            return o.to(dtype) if isinstance(o, torch.Tensor) and o.is_floating_point() else o

        out = fn(*map(up, args), **{k: up(v) for k, v in kwargs.items()})
        return type(out)(map(down, out)) if isinstance(out, (tuple, list)) else down(out)

    return call


class _StubLoader(importlib.abc.Loader):
    """A module for an extension that is not built here: any use of it is a clear error."""

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        name = module.__name__

        def __getattr__(attr):
            if attr.startswith("__"):
                raise AttributeError(attr)
            raise RuntimeError(
                f"modelzoo port: the extension {name} is not built on this machine, and "
                f"{name}.{attr} was called by code no --op route covers: route the "
                f"torch.autograd.Function that calls it with --op CLASS=module:function")

        module.__getattr__ = __getattr__


def _parse_routes(text):
    routes = {}
    for item in filter(None, (i.strip() for i in text.split(";"))):
        key, sep, impl = item.partition("=")
        if not sep or ":" not in impl:
            raise SystemExit(f"modelzoo port: MODELZOO_PORT_OPS item {item!r}: "
                             "expected CLASS=module:function")
        routes[key.strip()] = impl.strip()
    return routes



def install():
    """Puts the routes of the environment in front of every other importer."""
    routes = _parse_routes(os.environ.get("MODELZOO_PORT_OPS", ""))
    stubs = [m for m in os.environ.get("MODELZOO_PORT_OP_STUBS", "").split(",") if m]
    if routes or stubs:
        sys.meta_path.insert(0, _OpRoutes(routes, stubs, os.environ.get("MODELZOO_PORT_OPS_RECORD"),
                                          os.environ.get("MODELZOO_PORT_OPS_FLOAT64") == "1"))
