"""The SDAA emulator's C libraries, found relative to this package (``../lib64``, where
scripts/build-emulator.sh puts both), loaded through ctypes. Nothing here ever loads a real
SDAA library: the runtime is checked to be the emulator's before anything else is loaded."""

import ctypes
import importlib.metadata
import os
import sys

import torch

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
LIB_DIR = os.path.normpath(os.path.join(PACKAGE_DIR, os.pardir, os.pardir, "lib64"))
PTH_FILE = "modelzoo-sdaa-emulator.pth"

# Banner row -> (library, version-string function), in the vendor's banner order.
LIBRARIES = (
    ("SDAA Runtime", "libsdaart.so", "sdaaRuntimeGetVersionString"),
    ("SDPTI", "libsdpti.so", "sdptiGetVersionString"),
    ("TecoDNN", "libtecodnn.so", "tecodnnGetVersionString"),
    ("TecoBLAS", "libtecoblas.so", "tecoblasGetVersionString"),
    ("CustomDNN", "libtecodnn_ext.so", "tecodnnExtGetVersionString"),
    ("TecoRAND", "libtecorand.so", "tecorandGetVersionString"),
    ("TCCL", "libtccl.so", "tcclGetVersionString"),
)


def _pth_files():
    """The emulator's .pth files on sys.path (what puts this package there)."""
    found = []
    for entry in sys.path:
        path = os.path.join(entry or os.curdir, PTH_FILE)
        if os.path.isfile(path):
            found.append(os.path.abspath(path))
    return found


def refuse_if_vendor_installed():
    """The emulator must never stand in for the vendor's package: if a torch_sdaa distribution
    is installed, importing this one is a path mix-up, not something to paper over."""
    for name in ("torch_sdaa", "torch-sdaa"):
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        where = dist.locate_file("")
        pth = _pth_files()
        remove = (
            "remove " + " and ".join(pth)
            if pth
            else f"remove {os.path.dirname(PACKAGE_DIR)} from sys.path (PYTHONPATH)"
        )
        raise ImportError(
            f"torch_sdaa: the vendor's {dist.metadata['Name']} {dist.version} is installed "
            f"(in {where}), but modelzoo's SDAA EMULATOR package was imported from {PACKAGE_DIR}. "
            f"The emulator never replaces a real torch_sdaa: {remove} so that "
            "`import torch_sdaa` loads the vendor's package."
        )


def _open(name, mode=ctypes.RTLD_LOCAL):
    path = os.path.join(LIB_DIR, name)
    if not os.path.isfile(path):
        raise ImportError(
            f"torch_sdaa (SDAA EMULATOR): {path} is missing; build the emulator with "
            "scripts/build-emulator.sh (or `make build`)"
        )
    return ctypes.CDLL(path, mode=mode)


def _c(lib, name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


class Runtime:
    """The ctypes functions torch_sdaa calls; one instance, `runtime`, made by load()."""

    def __init__(self):
        sz = ctypes.c_size_t
        p_int = ctypes.POINTER(ctypes.c_int)
        p_sz = ctypes.POINTER(ctypes.c_size_t)
        self.sdaart = _open("libsdaart.so", ctypes.RTLD_GLOBAL)
        version = _c(self.sdaart, "sdaaRuntimeGetVersionString", ctypes.c_char_p)().decode()
        if not version.endswith("-emulator"):
            raise ImportError(
                f"torch_sdaa (SDAA EMULATOR): {LIB_DIR}/libsdaart.so reports version {version!r}, "
                "not the emulator's; this package only runs on the emulator's libraries"
            )
        rt = self.sdaart
        self.get_device_count = _c(rt, "sdaaGetDeviceCount", ctypes.c_int, p_int)
        self.set_device = _c(rt, "sdaaSetDevice", ctypes.c_int, ctypes.c_int)
        self.get_device = _c(rt, "sdaaGetDevice", ctypes.c_int, p_int)
        self.device_synchronize = _c(rt, "sdaaDeviceSynchronize", ctypes.c_int)
        self.mem_get_info = _c(rt, "sdaaMemGetInfo", ctypes.c_int, p_sz, p_sz)
        self.get_device_properties = _c(
            rt, "sdaaGetDeviceProperties", ctypes.c_int, ctypes.c_void_p, ctypes.c_int
        )
        self.error_string = _c(rt, "sdaaGetErrorString", ctypes.c_char_p, ctypes.c_int)
        self.memory_stats = _c(rt, "sdaaEmuMemoryStats", ctypes.c_int, ctypes.c_int, p_sz, p_sz)
        self.reset_peak = _c(rt, "sdaaEmuResetPeak", ctypes.c_int, ctypes.c_int)
        self.driver_version = _c(rt, "sdaaDriverGetVersionString", ctypes.c_char_p)().decode()

        if torch._C._get_privateuse1_backend_name() not in ("privateuseone", "sdaa"):
            raise ImportError(
                "torch_sdaa (SDAA EMULATOR): torch's PrivateUse1 backend is already registered "
                f"as {torch._C._get_privateuse1_backend_name()!r} by another plugin; the "
                "emulator needs it for 'sdaa' (import torch_sdaa in a fresh process)"
            )
        self.plugin_path = os.path.join(LIB_DIR, "libtorch_sdaa.so")
        # The plugin's static initialisers register "sdaa", its allocator, guard and kernels.
        self.plugin = _open("libtorch_sdaa.so", ctypes.RTLD_GLOBAL)
        self.plugin_version = _c(self.plugin, "torch_sdaa_version", ctypes.c_char_p)().decode()
        self.inventory_enable = _c(self.plugin, "torch_sdaa_emu_inventory_enable", ctypes.c_int)
        self.inventory_json = _c(
            self.plugin, "torch_sdaa_emu_inventory_json", sz, ctypes.c_char_p, sz
        )
        self.inventory_reset = _c(self.plugin, "torch_sdaa_emu_inventory_reset", None)
        self.inventory_document = _c(
            self.plugin, "torch_sdaa_emu_inventory_document", sz, ctypes.c_char_p, sz, ctypes.c_int
        )
        self.inventory_frontend_writes = _c(
            self.plugin, "torch_sdaa_emu_inventory_frontend_writes", None
        )

        self.perturb_error = _c(self.plugin, "torch_sdaa_emu_perturb_error", ctypes.c_char_p)

        self.tccl = _open("libtccl.so")
        self.versions = []  # (banner row, version, absolute path)
        for row, name, fn in LIBRARIES:
            lib = self.sdaart if name == "libsdaart.so" else (
                self.tccl if name == "libtccl.so" else _open(name)
            )
            text = _c(lib, fn, ctypes.c_char_p)().decode()
            self.versions.append((row, text, os.path.join(LIB_DIR, name)))

    def check_settings(self):
        """Raises SettingError for the first emulator setting that is set but not valid: the
        libraries' own (they name the variable, its value and what is allowed), then the
        package's."""
        for lib, fn in ((self.sdaart, "sdaaEmuConfigError"), (self.tccl, "tcclEmuConfigError")):
            why = _c(lib, fn, ctypes.c_char_p)()
            if why:
                raise SettingError(why.decode())
        why = self.perturb_error()
        if why:
            raise SettingError(why.decode())
        check_package_settings()

    def check(self, rc, what):
        """Raises for a runtime error code, with the emulator's text for it."""
        if rc != 0:
            raise RuntimeError(
                f"torch.sdaa (SDAA EMULATOR): {what} failed: {self.error_string(rc).decode()}"
            )


class SettingError(ImportError, ValueError):
    """An SDAA_EMULATOR_* / SDAA_EMU_* / TCCL_EMULATOR_* / TORCH_SDAA_* setting that is set but
    not valid: never replaced by a default, so a run cannot silently emulate something else."""


def _bad(name, value, allowed):
    return SettingError(
        f"torch_sdaa (SDAA EMULATOR): {name}={value!r} is not valid: expected {allowed}"
    )


def check_package_settings():
    """The settings this package reads itself (the libraries check theirs)."""
    banner = os.environ.get("TORCH_SDAA_BANNER")
    if banner not in (None, "", "0", "1"):  # empty: as unset
        raise _bad("TORCH_SDAA_BANNER", banner, "0 (no version table on import) or 1 (the default)")
    inventory = os.environ.get("SDAA_EMULATOR_OP_INVENTORY")
    if inventory:
        if os.path.exists(inventory) and not os.path.isdir(inventory):
            raise _bad(
                "SDAA_EMULATOR_OP_INVENTORY",
                inventory,
                "a directory to write the op inventory into (it is created when missing); "
                "this path exists and is not a directory",
            )
        rank = os.environ.get("RANK")
        if rank is not None and not (rank.isascii() and rank.isdigit()):
            raise _bad("RANK", rank, "an integer >= 0 (the rank in the op inventory's file names)")


runtime = None


def load():
    """Loads the libraries once; returns the Runtime."""
    global runtime
    if runtime is None:
        loaded = Runtime()
        loaded.check_settings()
        runtime = loaded
    return runtime
