"""modelzoo_opcheck: the acceptance check of one op (`modelzoo op check`, docs/op.md).

An implementation (``impl``) runs on the device under test; a reference (``ref``) runs in
float64 on the CPU on copies of the same inputs, forward and (``backward=True``) the gradient of
every floating input that requires one, for each case that a ``cases(dtype, device, seed)``
function yields as ``(name, args, kwargs)``. Every case also runs on non-contiguous copies of
its inputs. Each result is judged by msprobe's standard (docs/op.md states it with the numbers
below; ``validator/src/diff/metrics.rs`` holds the same small-value rule for ``modelzoo diff``).

The numbers (msprobe, api_accuracy_checker ``precision_standard/standard_config.py``):

* small-value threshold ``SMALL_VALUE`` (msprobe's ``_minmum_err``): an element whose float64
  reference is below it in magnitude is judged by its absolute error, which must not exceed it;
* relative bound ``REL_BOUND`` (msprobe's ``_accumulative_error_bound``, its bound for ops that
  accumulate): every other element's relative error must not exceed it;
* cosine similarity >= 0.99 (msprobe's rule), unless the whole reference is below the
  small-value threshold (a near-zero tensor has no direction to compare);
* a result outside those bounds still passes when the same reference run on the CPU in the
  implementation's own dtype is about as far from float64 (msprobe's benchmark ratios,
  implementation / CPU same dtype: RMSE <= 2, mean relative error <= 2, small-value error rate
  <= 2, max relative error <= 10), so a correct low-precision op is not failed for the
  precision of its dtype.

Used as ``python -m modelzoo_opcheck ...`` (what the Rust command runs); ``check()`` and
``repro()`` are the Python entry points.
"""

import importlib
import json
import math
import os
import sys
import traceback

import torch

__all__ = [
    "SMALL_VALUE",
    "REL_BOUND",
    "COSINE_MIN",
    "RATIO_LIMITS",
    "CouldNotRun",
    "check",
    "repro",
    "judge",
    "small_value_threshold",
]

SMALL_VALUE = {torch.float32: 2.0**-14, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}
REL_BOUND = {torch.float32: 2.0**-11, torch.float16: 2.0**-8, torch.bfloat16: 2.0**-7}
COSINE_MIN = 0.99
RATIO_LIMITS = {"rmse": 2.0, "mean_rel": 2.0, "small_value_rate": 2.0, "max_rel": 10.0}

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


class CouldNotRun(Exception):
    """The check could not be made (exit 2): the message names what and what to do."""


def small_value_threshold(dtype):
    """msprobe's small-value threshold of ``dtype`` (float64 and others: float32's)."""
    return SMALL_VALUE.get(dtype, SMALL_VALUE[torch.float32])


def rel_bound(dtype):
    return REL_BOUND.get(dtype, REL_BOUND[torch.float32])


# --------------------------------------------------------------------------------------------
# Loading the user's functions


def load(spec, what):
    """``MOD:FN`` -> the function, or CouldNotRun naming the spec."""
    if not isinstance(spec, str) or spec.count(":") != 1 or not all(spec.split(":")):
        raise CouldNotRun(f"--{what} {spec!r}: expected MODULE:FUNCTION (e.g. my_ops:my_op)")
    mod_name, fn_name = spec.split(":")
    try:
        mod = importlib.import_module(mod_name)
    except Exception as e:  # noqa: BLE001 - any import failure is the user's to see
        raise CouldNotRun(
            f"--{what} {spec}: cannot import module `{mod_name}` (searched the current directory "
            f"{os.getcwd()} and PYTHONPATH): {type(e).__name__}: {e}"
        ) from e
    fn = mod
    for part in fn_name.split("."):
        if not hasattr(fn, part):
            raise CouldNotRun(
                f"--{what} {spec}: module `{mod_name}` ({getattr(mod, '__file__', '?')}) has no "
                f"`{fn_name}`"
            )
        fn = getattr(fn, part)
    if not callable(fn):
        raise CouldNotRun(f"--{what} {spec}: `{fn_name}` is not callable")
    return fn


def use_device(device):
    """Make ``device`` usable (``sdaa``: import torch_sdaa, the card's or the emulator's)."""
    kind = device.split(":")[0]
    if kind == "sdaa" and not hasattr(torch, "sdaa"):
        os.environ.setdefault("TORCH_SDAA_BANNER", "0")
        try:
            importlib.import_module("torch_sdaa")
        except Exception as e:  # noqa: BLE001
            raise CouldNotRun(
                f"device sdaa unavailable: `import torch_sdaa` failed ({type(e).__name__}: {e}); "
                "install the vendor's torch_sdaa, or build the kit's emulator (`make build`) and "
                "run through `modelzoo op check`, which puts it on PYTHONPATH"
            ) from e
    try:
        torch.empty(1, device=device)
    except Exception as e:  # noqa: BLE001
        raise CouldNotRun(f"device {device} unavailable: {type(e).__name__}: {e}") from e


# --------------------------------------------------------------------------------------------
# Inputs: copies for the reference, non-contiguous copies for the implementation


def tree_map(fn, x):
    if isinstance(x, torch.Tensor):
        return fn(x)
    if isinstance(x, tuple):
        return tuple(tree_map(fn, v) for v in x)
    if isinstance(x, list):
        return [tree_map(fn, v) for v in x]
    if isinstance(x, dict):
        return {k: tree_map(fn, v) for k, v in x.items()}
    return x


def tree_tensors(x, prefix=""):
    """[(name, tensor)] in order: positional args `arg0`, `arg1.0`, kwargs by name."""
    if isinstance(x, torch.Tensor):
        return [(prefix, x)]
    out = []
    if isinstance(x, (tuple, list)):
        for i, v in enumerate(x):
            out += tree_tensors(v, f"{prefix}.{i}" if prefix else str(i))
    elif isinstance(x, dict):
        for k, v in x.items():
            out += tree_tensors(v, f"{prefix}.{k}" if prefix else str(k))
    return out


def copy_to(dtype_for_floats, device):
    """A function copying a tensor to ``device``, floating ones cast to ``dtype_for_floats``
    (None: kept), detached, ``requires_grad`` kept."""

    def f(t):
        c = t.detach().to(device)
        if t.is_floating_point() and dtype_for_floats is not None:
            c = c.to(dtype_for_floats)
        c = c.clone()
        if t.requires_grad and c.is_floating_point():
            c.requires_grad_(True)
        return c

    return f


def non_contiguous(t):
    """The same values in a non-contiguous layout: 2-D and more transposed in memory
    (transpose, contiguous, transpose back), 1-D a strided slice of a buffer twice as long."""
    d = t.detach()
    if d.dim() >= 2 and d.size(-1) > 1 and d.size(-2) > 1:
        c = d.transpose(-1, -2).contiguous().transpose(-1, -2)
    elif d.dim() >= 1 and d.numel() > 1:
        buf = torch.zeros((2 * d.numel(),), dtype=d.dtype, device=d.device)
        c = buf[::2].view(d.shape) if d.dim() == 1 else buf[::2].reshape(d.shape)
        c.copy_(d)
    else:
        c = d.clone()
    if t.requires_grad and c.is_floating_point():
        c.requires_grad_(True)
    return c


def layout_is_different(args, kwargs):
    return any(not t.is_contiguous() for _, t in input_tensors(args, kwargs))


# --------------------------------------------------------------------------------------------
# Running one side


def flatten_outputs(out):
    """Outputs as [(name, tensor)]: `out` for a single tensor, `out.0`, `out.1`, ... for a
    tuple or list (nested: `out.0.1`), `out.KEY` for a dict; non-tensors dropped."""
    if isinstance(out, torch.Tensor):
        return [("out", out)]
    return [("out." + n, t) for n, t in tree_tensors(out)]


def input_tensors(args, kwargs):
    """The tensor inputs as [(name, tensor)]: `arg0`, `arg1.2` (nested), kwargs by name."""
    out = []
    for i, a in enumerate(args):
        out += [(f"arg{i}" + (f".{n}" if n else ""), t) for n, t in tree_tensors(a)]
    for k, v in kwargs.items():
        out += [(str(k) + (f".{n}" if n else ""), t) for n, t in tree_tensors(v)]
    return out


def grad_inputs(args, kwargs):
    return [(n, t) for n, t in input_tensors(args, kwargs) if t.requires_grad]


def cotangent(name, shape, seed):
    """The fixed random cotangent of output `name`: float64, the same for every side."""
    g = torch.Generator().manual_seed((seed * 1_000_003 + sum(map(ord, name))) & 0x7FFF_FFFF)
    return torch.randn(tuple(shape), generator=g, dtype=torch.float64)


def run_side(fn, args, kwargs, backward, seed):
    """Run `fn`; return ({name: tensor on CPU}, error text or None). With `backward`, the
    gradients of the inputs requiring one are `grad:<input name>` (None where unused)."""
    try:
        out = fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - an implementation that raises fails the case
        return {}, f"raised {type(e).__name__}: {e}"
    outs = flatten_outputs(out)
    if not outs:
        return {}, f"returned no tensor (got {type(out).__name__})"
    results = {n: t.detach().to("cpu") for n, t in outs}
    if backward:
        inputs = grad_inputs(args, kwargs)
        diff_outs = [(n, t) for n, t in outs if t.requires_grad]
        if inputs and diff_outs:
            grads_out = [cotangent(n, t.shape, seed).to(dtype=t.dtype, device=t.device) for n, t in diff_outs]
            try:
                grads = torch.autograd.grad(
                    [t for _, t in diff_outs], [t for _, t in inputs], grads_out, allow_unused=True
                )
            except Exception as e:  # noqa: BLE001
                return results, f"backward raised {type(e).__name__}: {e}"
            for (n, _), g in zip(inputs, grads):
                results["grad:" + n] = None if g is None else g.detach().to("cpu")
        elif inputs:
            for n, _ in inputs:
                results["grad:" + n] = None
    return results, None


# --------------------------------------------------------------------------------------------
# Metrics and the verdict


def metrics(ref, got, dtype):
    """Metrics of `got` against `ref` (both as float64 on the CPU) for dtype `dtype`."""
    s = small_value_threshold(dtype)
    r = rel_bound(dtype)
    ref = ref.to(torch.float64).reshape(-1)
    got = got.to(torch.float64).reshape(-1)
    n = ref.numel()
    fin_r, fin_g = torch.isfinite(ref), torch.isfinite(got)
    both = fin_r & fin_g
    same_special = (~fin_r) & (~fin_g) & ((ref == got) | (torch.isnan(ref) & torch.isnan(got)))
    nonfinite_mismatch = int((~both & ~same_special).sum())
    rf, gf = ref[both], got[both]
    d = (gf - rf).abs()
    small = rf.abs() < s
    normal = ~small
    rel = d[normal] / rf[normal].abs()
    small_err = int((d[small] > s).sum())
    rel_err = int((rel > r).sum())
    near_zero = bool(small.all()) if rf.numel() else True
    if near_zero:
        cosine = None
    else:
        nr, ng = rf.norm(), gf.norm()
        cosine = 0.0 if float(ng) == 0.0 else float((rf @ gf) / (nr * ng))
        cosine = max(-1.0, min(1.0, cosine)) if math.isfinite(cosine) else 0.0
    return {
        "numel": n,
        "cosine": cosine,
        "max_abs": float(d.max()) if d.numel() else 0.0,
        "max_rel": float(rel.max()) if rel.numel() else 0.0,
        "mean_rel": float(rel.mean()) if rel.numel() else 0.0,
        "rmse": float(d.pow(2).mean().sqrt()) if d.numel() else 0.0,
        "ref_rms": float(rf.pow(2).mean().sqrt()) if rf.numel() else 0.0,
        "small_values": int(small.sum()),
        "small_value_errors": small_err,
        "rel_errors": rel_err,
        "nonfinite_mismatch": nonfinite_mismatch,
        "near_zero": near_zero,
        "small_value_threshold": s,
        "rel_bound": r,
    }


def _ratio(impl, bench, floor):
    return max(impl, floor) / max(bench, floor)


def benchmark_ratios(m, b, dtype):
    """msprobe's benchmark ratios: the implementation's error / the CPU same-dtype run's, each
    floored (at one `dtype` epsilon of the scale) so two exact results read 1."""
    eps = torch.finfo(dtype).eps
    return {
        "rmse": _ratio(m["rmse"], b["rmse"], eps * max(m["ref_rms"], small_value_threshold(dtype))),
        "mean_rel": _ratio(m["mean_rel"], b["mean_rel"], eps),
        "max_rel": _ratio(m["max_rel"], b["max_rel"], eps),
        "small_value_rate": _ratio(
            m["small_value_errors"] / max(m["small_values"], 1),
            b["small_value_errors"] / max(b["small_values"], 1),
            1.0 / max(m["small_values"], 1),
        ),
    }


def judge(ref, got, dtype, bench=None):
    """One tensor's row: metrics, verdict (`pass` / `fail`), `judged_by` and the reason.

    `ref` is the float64 reference, `got` the implementation's result, `bench` the reference
    run on the CPU in `dtype` (None where it could not run)."""
    if got is None or ref is None:
        if got is None and ref is None:
            return {"verdict": "pass", "judged_by": "none", "reason": "no gradient on either side"}
        side = "implementation" if got is None else "reference"
        return {"verdict": "fail", "judged_by": "none", "reason": f"the {side} gives no gradient here, the other does"}
    if tuple(ref.shape) != tuple(got.shape):
        return {"verdict": "fail", "judged_by": "shape", "reason": f"shape {list(got.shape)} vs the reference's {list(ref.shape)}"}
    if not ref.is_floating_point() or not got.is_floating_point():
        bad = int((ref.to(torch.float64) != got.to(torch.float64)).sum())
        return {
            "verdict": "pass" if bad == 0 else "fail",
            "judged_by": "exact",
            "mismatches": bad,
            "reason": "" if bad == 0 else f"{bad} element(s) differ (a non-floating result must be equal)",
        }
    m = metrics(ref, got, dtype)
    row = dict(m)
    reasons = []
    if m["nonfinite_mismatch"]:
        reasons.append(f"{m['nonfinite_mismatch']} NaN/Inf element(s) where the reference differs")
    if m["cosine"] is not None and m["cosine"] < COSINE_MIN:
        reasons.append(f"cosine {m['cosine']:.6f} < {COSINE_MIN}")
    threshold_ok = m["small_value_errors"] == 0 and m["rel_errors"] == 0
    if reasons:
        row.update(verdict="fail", judged_by="threshold", reason="; ".join(reasons))
        return row
    if threshold_ok:
        row.update(verdict="pass", judged_by="threshold", reason="")
        return row
    why = []
    if m["small_value_errors"]:
        why.append(f"{m['small_value_errors']} small value(s) (|ref| < {m['small_value_threshold']:.3g}) off by more than {m['small_value_threshold']:.3g}")
    if m["rel_errors"]:
        why.append(f"{m['rel_errors']} element(s) with relative error > {m['rel_bound']:.3g} (max {m['max_rel']:.3g})")
    if bench is None or tuple(bench.shape) != tuple(ref.shape):
        row.update(verdict="fail", judged_by="threshold", reason="; ".join(why) + " (no CPU same-dtype benchmark to set it against)")
        return row
    b = metrics(ref, bench, dtype)
    ratios = benchmark_ratios(m, b, dtype)
    row["benchmark"] = {k: b[k] for k in ("rmse", "mean_rel", "max_rel", "small_value_errors")}
    row["ratios"] = ratios
    over = [f"{k} ratio {v:.3g} > {RATIO_LIMITS[k]:g}" for k, v in ratios.items() if v > RATIO_LIMITS[k]]
    if over:
        row.update(verdict="fail", judged_by="benchmark", reason="; ".join(why) + "; against the CPU in the same dtype: " + ", ".join(over))
    else:
        row.update(verdict="pass", judged_by="benchmark", reason="")
    return row


# --------------------------------------------------------------------------------------------
# The check


def _cases(inputs_fn, dtype, device, seed, spec):
    try:
        cases = list(inputs_fn(dtype, device, seed))
    except Exception as e:  # noqa: BLE001
        raise CouldNotRun(
            f"--inputs {spec}: cases({dtype}, {device!r}, {seed}) raised {type(e).__name__}: {e}\n"
            + "".join(traceback.format_exception(type(e), e, e.__traceback__)[-3:])
        ) from e
    out = []
    for i, c in enumerate(cases):
        if not (isinstance(c, (tuple, list)) and len(c) == 3 and isinstance(c[0], str)
                and isinstance(c[1], (tuple, list)) and isinstance(c[2], dict)):
            raise CouldNotRun(
                f"--inputs {spec}: case {i} is not (name, args, kwargs) with a str name, a tuple "
                f"of args and a dict of kwargs (got {type(c).__name__})"
            )
        out.append((c[0], tuple(c[1]), dict(c[2])))
    if not out:
        raise CouldNotRun(f"--inputs {spec}: cases({dtype}, {device!r}, {seed}) yielded no case")
    return out


def run_case(ref_fn, impl_fn, name, args, kwargs, dtype, backward, seed):
    """Rows for one case in one dtype: contiguous and non-contiguous layouts."""
    ref_args = tree_map(copy_to(torch.float64, "cpu"), (args, kwargs))
    ref, err = run_side(ref_fn, ref_args[0], ref_args[1], backward, seed)
    if err:
        raise CouldNotRun(f"--ref: case `{name}` ({dtype_name(dtype)}): the reference {err}")
    bench_args = tree_map(copy_to(None, "cpu"), (args, kwargs))
    bench, bench_err = run_side(ref_fn, bench_args[0], bench_args[1], backward, seed)
    if bench_err:
        bench = {}
    rows = []
    layouts = [("contiguous", (args, kwargs))]
    nc = tree_map(non_contiguous, (args, kwargs))
    if layout_is_different(*nc):
        layouts.append(("non-contiguous", nc))
    for layout, (a, k) in layouts:
        got, err = run_side(impl_fn, a, k, backward, seed)
        if err and not got:
            rows.append({"case": name, "dtype": dtype_name(dtype), "layout": layout, "tensor": "out",
                         "verdict": "fail", "judged_by": "none", "reason": f"the implementation {err}"})
            continue
        for tname in ref:
            if tname.startswith("grad:") and err:
                rows.append({"case": name, "dtype": dtype_name(dtype), "layout": layout, "tensor": tname,
                             "verdict": "fail", "judged_by": "none", "reason": f"the implementation's {err}"})
                continue
            if tname not in got:
                rows.append({"case": name, "dtype": dtype_name(dtype), "layout": layout, "tensor": tname,
                             "verdict": "fail", "judged_by": "none",
                             "reason": "the implementation gives no such output" if not tname.startswith("grad:")
                             else "the implementation's output does not reach this input (no gradient)"})
                continue
            row = judge(ref[tname], got[tname], dtype, bench.get(tname))
            row.update(case=name, dtype=dtype_name(dtype), layout=layout, tensor=tname)
            rows.append(row)
        extra = [t for t in got if t not in ref]
        for tname in extra:
            rows.append({"case": name, "dtype": dtype_name(dtype), "layout": layout, "tensor": tname,
                         "verdict": "fail", "judged_by": "none", "reason": "the reference gives no such output"})
    return rows


def describe_inputs(args, kwargs):
    """What a failing case is made of: each tensor input's name, dtype, shape, strides and
    whether it requires grad."""
    return [{"name": n, "dtype": dtype_name(t.dtype), "shape": list(t.shape), "stride": list(t.stride()),
             "requires_grad": bool(t.requires_grad)} for n, t in input_tensors(args, kwargs)]


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def check(ref, impl, inputs, device="sdaa", dtypes=("float32",), backward=False, seed=0,
          repro_dir=None, only_case=None):
    """Run the check; returns the result dict (`pass`, `rows`, `repros`, ...). Raises
    CouldNotRun when it cannot be made."""
    for d in dtypes:
        if d not in DTYPES:
            raise CouldNotRun(f"--dtypes: unknown dtype `{d}` (use float32, float16, bfloat16)")
    ref_fn, impl_fn, inputs_fn = load(ref, "ref"), load(impl, "impl"), load(inputs, "inputs")
    use_device(device)
    rows = []
    described = {}
    for d in dtypes:
        dtype = DTYPES[d]
        for name, args, kwargs in _cases(inputs_fn, dtype, device, seed, inputs):
            if only_case is not None and name != only_case:
                continue
            described[(name, d)] = describe_inputs(args, kwargs)
            rows.extend(run_case(ref_fn, impl_fn, name, args, kwargs, dtype, backward, seed))
    if only_case is not None and not rows:
        raise CouldNotRun(f"--inputs {inputs}: no case named `{only_case}`")
    failing = sorted({(r["case"], r["dtype"]) for r in rows if r["verdict"] != "pass"})
    repros = []
    if repro_dir and failing:
        os.makedirs(repro_dir, exist_ok=True)
        for case, d in failing:
            repros.append(write_repro(repro_dir, ref, impl, inputs, case, d, device, backward, seed))
            repros[-1]["inputs"] = described.get((case, d), [])
    return {
        "format": "modelzoo-op-check",
        "version": 1,
        "ref": ref,
        "impl": impl,
        "inputs": inputs,
        "device": device,
        "dtypes": list(dtypes),
        "backward": backward,
        "seed": seed,
        "standard": standard(),
        "pass": not failing,
        "rows": rows,
        "failing": [{"case": c, "dtype": d, "inputs": described.get((c, d), [])} for c, d in failing],
        "repros": repros,
    }


def standard():
    """The standard as data (written into the JSON, printed by the Rust command)."""
    return {
        "cosine_min": COSINE_MIN,
        "small_value_threshold": {dtype_name(k): v for k, v in SMALL_VALUE.items()},
        "rel_bound": {dtype_name(k): v for k, v in REL_BOUND.items()},
        "benchmark_ratio_limits": dict(RATIO_LIMITS),
    }


def module_root(spec):
    """The sys.path directory `spec`'s module was imported from (None when unknown)."""
    mod = sys.modules.get(spec.split(":")[0])
    f = getattr(mod, "__file__", None)
    if not f:
        return None
    root = os.path.dirname(os.path.abspath(f))
    parts = spec.split(":")[0].split(".")
    # a.b.c from .../a/b/c.py: up 2; a package a.b from .../a/b/__init__.py: up 2 as well.
    depth = len(parts) if os.path.basename(f).startswith("__init__.") else len(parts) - 1
    for _ in range(depth):
        root = os.path.dirname(root)
    return root


def _safe(name):
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:80] or "case"


def write_repro(repro_dir, ref, impl, inputs, case, dtype, device, backward, seed):
    """A standalone script re-running one failing case: it rebuilds the inputs with the seed,
    runs both sides and prints the metrics; exit 1 while it still fails."""
    kit = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(repro_dir, f"repro_{_safe(case)}_{dtype}.py")
    roots = [os.getcwd()] + [r for r in (module_root(s) for s in (ref, impl, inputs)) if r]
    roots = list(dict.fromkeys(roots))
    text = f'''#!/usr/bin/env python3
"""Repro of a failing `modelzoo op check` case, written by modelzoo_opcheck.

case {case!r}, dtype {dtype}, device {device}, seed {seed}, backward {backward}
ref {ref}  impl {impl}  inputs {inputs}

Run it from anywhere: python {os.path.basename(path)}  (exit 0 when the case now passes, 1 while it fails)
"""
import os
import sys

sys.path[:0] = {roots + [kit]!r}
if {device.split(":")[0]!r} == "sdaa":
    emulator = os.path.join({kit!r}, "..", "target", "sdaa-emulator")
    if os.path.isdir(os.path.join(emulator, "python")):
        sys.path.append(os.path.join(emulator, "python"))
        os.environ.setdefault("SDAA_HOME", os.path.abspath(emulator))

import modelzoo_opcheck

sys.exit(modelzoo_opcheck.repro(
    ref={ref!r}, impl={impl!r}, inputs={inputs!r}, case={case!r}, dtype={dtype!r},
    device={device!r}, seed={seed!r}, backward={backward!r},
))
'''
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)
    return {"case": case, "dtype": dtype, "path": path}


def repro(ref, impl, inputs, case, dtype, device, seed, backward):
    """Re-run one case and print its rows; 0 when it passes, 1 when it fails, 2 when it
    cannot run."""
    try:
        res = check(ref, impl, inputs, device=device, dtypes=(dtype,), backward=backward, seed=seed,
                    only_case=case)
    except CouldNotRun as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for r in res["rows"]:
        print(format_row(r))
    print("PASS" if res["pass"] else "FAIL")
    return 0 if res["pass"] else 1


def format_row(r):
    def f(k):
        v = r.get(k)
        if v is None:
            return "-"
        return f"{v:.6g}" if isinstance(v, float) else str(v)

    return (f"{r['case']} {r['dtype']} {r['layout']} {r['tensor']}: cosine {f('cosine')} max_abs {f('max_abs')} "
            f"max_rel {f('max_rel')} small_value_errors {f('small_value_errors')} -> {r['verdict']}"
            + (f" ({r['reason']})" if r.get("reason") else ""))


def _clean(o):
    """JSON-safe: non-finite floats become null, anything unknown its str()."""
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {str(k): _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    if o is None or isinstance(o, (bool, int, str)):
        return o
    return str(o)


def write_json(path, obj):
    """Write `obj` to `path` atomically (temporary file, then rename)."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(_clean(obj), f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)
