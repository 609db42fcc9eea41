#!/usr/bin/env bash
# Labs 06, 10, 11 and 12 (ZeRO, Megatron's f and g, sequence parallel, 1F1B's order): each reference scores full
# marks, each starter none, each control loses exactly what it names (tests/cli/lib_labs.sh).
LABS="06 10 11 12" source "$(dirname "$0")/lib_labs.sh"
