#!/usr/bin/env bash
# Lab 04's reference, starter and controls (crash, hang and compile error among them), and its handout
# (tests/cli/lib_labs.sh). The other labs: labs_parallel.sh and
# labs_kernels.sh (separate suites, so they run side by side).
LABS=04 HANDOUT=04 source "$(dirname "$0")/lib_labs.sh"
