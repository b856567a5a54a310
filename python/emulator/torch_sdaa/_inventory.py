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


def _document():
    """The plugin's inventory document (inventory.cpp: one source for torch_sdaa and the Rust
    models, which the plugin writes for at exit)."""
    rt = _lib.load()
    need = rt.inventory_document(None, 0, 0)
    while True:
        buf = bytes(need)
        got = rt.inventory_document(buf, need, 0)
        if got <= need:
            return json.loads(buf[: got - 1].decode())
        need = got


def inventory():
    """The inventory so far, as written to op_inventory.rank<R>.json."""
    if not _enabled:
        raise RuntimeError(
            "torch_sdaa (SDAA EMULATOR): the op inventory is off; set "
            f"{ENV}=<dir> before importing torch_sdaa, or call "
            "torch_sdaa.emulator.enable_op_inventory() before the ops to count"
        )
    inv = _document()
    inv["torch"] = torch.__version__  # the host torch's full version (the plugin knows X.Y.Z)
    return inv


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
        _lib.load().inventory_frontend_writes()
        atexit.register(write, os.path.abspath(directory))
