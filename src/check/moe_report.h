// check/moe_report.h — the mixture-of-experts part of `plan --ledger`'s output (claim C25): the experts and where
// their rows came from (the formula, or the run's routing), each rank's expert parameters, the activations with
// each item's bytes over the run and its peak, each ep rank's all-to-alls per purpose beside the formula (and beside
// an even load), and the words of a mismatch — a wrong call named with its step, micro-batch, layer and direction,
// expected against got. check/ledger_report.cpp calls these when the ledger has a "moe" section.
#pragma once

#include <iosfwd>
#include <string>

#include "check/ledger_check.h"

namespace shardlab::plan {

void print_moe(std::ostream& out, const LedgerCheck& c);              // the experts, expert params per rank
void print_moe_activations(std::ostream& out, const LedgerCheck& c);  // rank 0's items over the run, the peak
void print_ep(std::ostream& out, const LedgerCheck& c);               // the all-to-alls (layout.ep > 1)
// What differs on rank rc, as " rank 3 …" phrases for the result line (empty when nothing does).
std::string moe_mismatches(const LedgerCheck& c, const RankCheck& rc);

}  // namespace shardlab::plan
