// plan/ledger_report.h — prints a LedgerCheck (plan/ledger_check.h) as aligned tables: the single-process
// table of rank 0's model states, or, for a DP / ZeRO / FSDP run, the layout fields, a row per rank
// of model-state bytes, and a row per rank of ring bytes per step, formula beside measured.
//
// Leaves out: reading the file and the exit-code policy of bad input (plan_cli.cpp does that).
#pragma once

#include <iosfwd>
#include <string>

#include "plan/ledger_check.h"

namespace shardlab::plan {

// Prints the check of the ledger at `path`; returns 0 if everything matches, else 1.
int print_ledger_check(std::ostream& out, const std::string& path, const LedgerCheck& c);

}  // namespace shardlab::plan
