"""What only the emulator has (the vendor's torch_sdaa has no such module): the op inventory.
See docs/torch_sdaa.md."""

from . import _inventory

IS_EMULATOR = True


def enable_op_inventory() -> None:
    """Starts counting ops (what SDAA_EMULATOR_OP_INVENTORY does at import, minus the files)."""
    _inventory.enable()


def op_inventory() -> dict:
    """The op inventory so far: the content of op_inventory.rank<R>.json."""
    return _inventory.inventory()


def write_op_inventory(directory: str):
    """Writes op_inventory.rank<R>.json and coverage.rank<R>.txt now; returns their paths."""
    return _inventory.write(directory)
