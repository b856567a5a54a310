#!/usr/bin/env bash
# Placeholder until the SDAA emulator lands: nothing to build yet.
exit 0
