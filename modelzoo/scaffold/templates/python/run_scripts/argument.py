"""Every argument of run_{{name}}.py, in one place (ModelZoo standard arguments first).

Scaffolded by `modelzoo new` from run_scripts-template/spec/standard.yaml; add the model's own
arguments at the end of `build_parser`.
"""
import argparse


def build_parser():
    parser = argparse.ArgumentParser(description="{{title}}: the uniform ModelZoo launcher")
{{argparse_arguments}}
    return parser


def parse_args(argv=None):
    return build_parser().parse_args(argv)
