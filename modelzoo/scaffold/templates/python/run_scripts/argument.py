"""Every argument of run_{{run}}.py, in one place: the ModelZoo standard arguments
(run_scripts-template/spec/standard.yaml, without the kit's own), then the model's own — add
those at the end of `build_parser`. The arguments passed on to the training script have no
default here: one not given is not passed, and the script's own default stands. Only the
launcher's own (processes, nodes, rendezvous, --print_cmd) have defaults.
"""
import argparse


def str2bool(v):
    """A switch that also takes a value: `--autocast`, `--autocast True`, `--autocast false`
    (the ModelZoo's PR check passes one)."""
    if isinstance(v, bool):
        return v
    if v.lower() in ("yes", "true", "t", "y", "1"):
        return True
    if v.lower() in ("no", "false", "f", "n", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected a boolean (true/false), got {v!r}")


def build_parser():
    parser = argparse.ArgumentParser(description="{{title}}: the uniform ModelZoo launcher")
{{argparse_arguments}}
    return parser


def parse_args(argv=None):
    return build_parser().parse_args(argv)
