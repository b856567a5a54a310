"""The op inventory of an emulated run: the plugin counts every dispatcher op with where it ran
(sdaa or the CPU side), its dtypes, fp64 use and the emulator's own fallbacks (inventory.cpp);
this module shapes the counts and writes them, at exit, as

    <dir>/op_inventory.rank<R>.json   the whole inventory (schema in docs/torch_sdaa.md)
    <dir>/coverage.rank<R>.txt        the public ModelZoo's three-line coverage.txt form

R is $RANK (0 without it). Off unless SDAA_EMULATOR_OP_INVENTORY=<dir> is set or
enable_op_inventory() is called: counting costs time on every op."""

import atexit
import json
import os

import torch

from . import _lib

FORMAT = "modelzoo-sdaa-op-inventory"
VERSION = 1
ENV = "SDAA_EMULATOR_OP_INVENTORY"

_enabled = False


def enable():
    """Starts counting (idempotent)."""
    global _enabled
    _lib.load().inventory_enable()
    _enabled = True


def _raw():
    rt = _lib.load()
    need = rt.inventory_json(None, 0)
    while True:
        buf = bytes(need)
        got = rt.inventory_json(buf, need)
        if got <= need:
            return json.loads(buf[: got - 1].decode())
        need = got


def _ops(by_op, fallbacks=None, failed=None):
    return [
        {
            "op": op,
            "count": sum(sigs.values()),
            "dtypes": [{"dtypes": sig, "count": n} for sig, n in sorted(sigs.items())],
            **({"emulator_fallback": op in fallbacks} if fallbacks is not None else {}),
            **({"failed": op in failed} if failed is not None else {}),
        }
        for op, sigs in sorted(by_op.items())
    ]


def _counts(by_op):
    return [{"op": op, "count": n} for op, n in sorted(by_op.items())]


def _short(op):
    return op[len("aten::"):] if op.startswith("aten::") else op


def inventory():
    """The inventory so far, as written to op_inventory.rank<R>.json."""
    if not _enabled:
        raise RuntimeError(
            "torch_sdaa (SDAA EMULATOR): the op inventory is off; set "
            f"{ENV}=<dir> before importing torch_sdaa, or call "
            "torch_sdaa.emulator.enable_op_inventory() before the ops to count"
        )
    raw = _raw()
    fallbacks = raw["emulator_fallbacks"]
    failed = raw["failed"]
    all_api = sorted({_short(op) for op in raw["device"]})
    fallback_api = sorted({_short(op) for op in raw["device"] if op in fallbacks})
    failed_api = sorted({_short(op) for op in failed})
    covered = [op for op in all_api if op not in fallback_api and op not in failed_api]
    rate = 100.0 * len(covered) / len(all_api) if all_api else 0.0
    return {
        "format": FORMAT,
        "version": VERSION,
        "emulator": True,
        "rank": int(os.environ.get("RANK", "0")),
        "pid": os.getpid(),
        "torch": torch.__version__,
        "torch_sdaa": _lib.load().plugin_version,
        "device_ops": _ops(raw["device"], fallbacks, failed),
        "host_ops": _ops(raw["host"]),
        "fp64": {"device": _counts(raw["fp64_device"]), "host": _counts(raw["fp64_host"])},
        "emulator_fallbacks": _counts(fallbacks),
        "failed_ops": [
            {"op": op, "count": n, "reason": raw["failed_why"].get(op, "raised an error")}
            for op, n in sorted(failed.items())
        ],
        "coverage": {
            "all_api": all_api,
            "fallback_op": fallback_api,
            "failed_op": failed_api,
            "rate_percent": round(rate, 2),
        },
    }


def coverage_text(inv):
    """The public ModelZoo's coverage.txt: all ops that ran on sdaa, those that fell back, and
    (a line of the emulator's, only when there are any) those that failed; the rate counts
    neither of the last two as covered."""
    cov = inv["coverage"]
    failed = ""
    if cov["failed_op"]:
        failed = f"failed op: {cov['failed_op']!r}, total: {len(cov['failed_op'])}\n"
    return (
        f"all api: {cov['all_api']!r}, total: {len(cov['all_api'])}\n"
        f"fallback op: {cov['fallback_op']!r}, total: {len(cov['fallback_op'])}\n"
        f"{failed}"
        f"coverage rate: {cov['rate_percent']:.2f}%\n"
    )


def _write_atomic(path, text):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def write(directory):
    """Writes both files for this process's rank into `directory`; returns their paths."""
    inv = inventory()
    os.makedirs(directory, exist_ok=True)
    rank = inv["rank"]
    json_path = os.path.join(directory, f"op_inventory.rank{rank}.json")
    txt_path = os.path.join(directory, f"coverage.rank{rank}.txt")
    _write_atomic(json_path, json.dumps(inv, indent=1) + "\n")
    _write_atomic(txt_path, coverage_text(inv))
    return json_path, txt_path


def start_from_env():
    """SDAA_EMULATOR_OP_INVENTORY=<dir>: count from now on, write at exit."""
    directory = os.environ.get(ENV)
    if directory:
        enable()
        atexit.register(write, os.path.abspath(directory))
