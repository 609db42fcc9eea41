#!/usr/bin/env bash
# Labs 06, 08, 10, 11, 12, 14 and 15: each reference scores full marks, each starter none, each control loses exactly
# what it names (tests/cli/lib_labs.sh).
LABS="06 08 10 11 12 14 15" source "$(dirname "$0")/lib_labs.sh"
