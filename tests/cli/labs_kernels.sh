#!/usr/bin/env bash
# Labs 08, 14 and 15 (flash's online softmax, ring attention's merge, MoE dispatch): each reference scores full
# marks, each starter none, each control loses exactly what it names (tests/cli/lib_labs.sh).
LABS="08 14 15" source "$(dirname "$0")/lib_labs.sh"
