// check/ledger_report.h — prints a LedgerCheck (check/ledger_check.h) as aligned tables: the single-process
// table of rank 0's model states, or, for a DP / ZeRO / FSDP run, the layout fields, a row per rank
// of model-state bytes, and a row per rank of ring bytes per step, formula beside measured.
//
// run_ledger reads the file and checks it: `shardlab plan --ledger FILE`.
#pragma once

#include <iosfwd>
#include <string>

#include "check/ledger_check.h"

namespace shardlab::plan {

// Prints the check of the ledger at `path`; returns 0 if everything matches, else 1.
int print_ledger_check(std::ostream& out, const std::string& path, const LedgerCheck& c);

// Checks the ledger at `path` and prints the tables. 0 if everything matches, 1 if not, 2 if unreadable.
int run_ledger(const std::string& path, std::ostream& out, std::ostream& err);

}  // namespace shardlab::plan
