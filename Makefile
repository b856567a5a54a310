# modelzoo — the two commands the README promises, and what they are made of.
#
#   make demo   set everything up, build, run the main job on the embedded default
#   make test   set everything up, build, run every test (fmt + clippy included)
#
# libtorch: PyTorch 2.11.0 from the Python package index in .venv/ (tch 0.24 binds exactly this
# version). To use an existing libtorch instead, run with LIBTORCH=/path/to/libtorch.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := demo

TORCH_VERSION := 2.11.0
VENV := $(CURDIR)/.venv
PYTHON ?= python3

ifdef LIBTORCH
TORCH_ENV := LIBTORCH=$(LIBTORCH)
else
TORCH_ENV := LIBTORCH_USE_PYTORCH=1 PATH=$(VENV)/bin:$$PATH
endif
CARGO := $(TORCH_ENV) cargo

.PHONY: setup build demo test lint bench bench-quick clean

## setup: .venv with torch==$(TORCH_VERSION), only when missing or at another version (idempotent).
setup:
	@scripts/setup.sh "$(TORCH_VERSION)" "$(VENV)" "$(PYTHON)"

build: setup
	$(CARGO) build --release --workspace --bins --examples
	@scripts/build-emulator.sh

demo: build
	@scripts/demo.sh

lint: setup
	cargo fmt --all --check
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings

test: build lint
	$(CARGO) test --release --workspace --no-fail-fast
	@# `modelzoo new --kind rust`: scaffold, build and train a model in a temporary workspace.
	@scripts/check-scaffold.sh
	@# The PR functional check on the zoo itself: every model.yaml entry, on the CPU.
	target/release/modelzoo ci --device cpu --work-dir target/modelzoo-ci \
		--junit target/modelzoo-ci/junit.xml --md target/modelzoo-ci/summary.md
	@# README's first command, so that a change that breaks it fails CI.
	@scripts/demo.sh

bench: build
	$(CARGO) bench --workspace

## bench-quick: the step's regression check, run_resnet / run_gpt vs PyTorch eager (not a test).
bench-quick: build
	@scripts/bench/quick.sh

clean:
	cargo clean
