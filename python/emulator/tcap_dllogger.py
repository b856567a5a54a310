"""``tcap_dllogger`` for scripts ported to SDAA where Tecorigin's package (not on the Python
package index) is absent: ``from tcap_dllogger import Logger, StdOutBackend, JSONStreamBackend,
Verbosity`` then runs unmodified and writes the lines modelzoo's log reader, ``modelzoo
compare`` and the ModelZoo's loss.py read (docs/python_logger.md).

It sits on sys.path after site-packages, so an installed tcap_dllogger wins over it.
"""

try:
    from modelzoo_dllogger import *  # noqa: F401,F403 (the shim is the re-export)
    from modelzoo_dllogger import __all__  # noqa: F401
except ModuleNotFoundError as e:
    if e.name != "modelzoo_dllogger":
        raise
    raise ModuleNotFoundError(
        "tcap_dllogger (the modelzoo stand-in) needs the package modelzoo_dllogger, which is not "
        "importable: install the kit's Python package into this environment "
        "(`make setup`, or `pip install --no-deps <modelzoo repo>/python`)",
        name="modelzoo_dllogger",
    ) from e
