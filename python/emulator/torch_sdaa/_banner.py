"""The table the vendor's torch_sdaa prints on import, with the emulator's versions and every
row marked EMULATOR, so no log of an emulated run can pass for one on SDAA hardware."""

import os
import socket

import torch

SEPARATOR = "--------------+------------------------------------------------"


def _host_ip():
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "N/A"


def _row(label, value):
    return f" {label:<13}| {value}"


def text(rt):
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    package_dir = os.path.dirname(os.path.abspath(__file__))
    lines = [
        SEPARATOR,
        _row("Host IP", f"{_host_ip()} (EMULATOR: SDAA emulated on this host's CPU)"),
        _row("PyTorch", f"{torch.__version__} (EMULATOR host PyTorch: {torch_dir})"),
        _row("Torch-SDAA", f"{rt.plugin_version} (EMULATOR: {package_dir}, {rt.plugin_path})"),
        SEPARATOR,
        _row("SDAA Driver", f"{rt.driver_version} (EMULATOR: no driver)"),
    ]
    lines += [_row(row, f"{version} (EMULATOR: {path})") for row, version, path in rt.versions]
    lines.append(SEPARATOR)
    return "\n".join(lines)
