"""``python -m modelzoo_opcheck --ref MOD:FN --impl MOD:FN --inputs MOD:FN --out FILE ...``:
the harness `modelzoo op check` runs. It writes the result JSON to FILE (rows, verdicts,
repro scripts) and exits 0 when the check ran (pass or fail: the JSON says which), 2 when it
could not run (FILE then holds {"error": ...}, also printed on stderr)."""

import argparse
import os
import sys
import traceback

import modelzoo_opcheck as oc


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m modelzoo_opcheck", description=__doc__)
    p.add_argument("--ref", required=True)
    p.add_argument("--impl", required=True)
    p.add_argument("--inputs", required=True)
    p.add_argument("--device", default="sdaa")
    p.add_argument("--dtypes", default="float32")
    p.add_argument("--backward", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repro-dir", default="op-check-repro")
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    # MOD resolves from the directory the check runs in, as `python -c 'import MOD'` would.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    dtypes = [d.strip() for d in a.dtypes.split(",") if d.strip()]
    try:
        res = oc.check(a.ref, a.impl, a.inputs, device=a.device, dtypes=dtypes, backward=a.backward,
                       seed=a.seed, repro_dir=a.repro_dir)
    except oc.CouldNotRun as e:
        print(f"error: {e}", file=sys.stderr)
        oc.write_json(a.out, {"format": "modelzoo-op-check", "version": 1, "error": str(e)})
        return 2
    except Exception as e:  # noqa: BLE001 - the harness itself failed: say so, exit 2
        text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        print(f"error: the op-check harness crashed:\n{text}", file=sys.stderr)
        oc.write_json(a.out, {"format": "modelzoo-op-check", "version": 1,
                              "error": f"the op-check harness crashed: {type(e).__name__}: {e}"})
        return 2
    oc.write_json(a.out, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
