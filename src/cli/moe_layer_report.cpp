// The page of `shardlab moe-layer` and its verdicts (see moe_layer_report.h).
#include "cli/moe_layer_report.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace shardlab {

namespace {

const char* kNames[kMoeTensors] = {"output",    "d_x",           "d_router.weight", "d_fc.weight",
                                   "d_fc.bias", "d_proj.weight", "d_proj.bias"};

std::string shape(int x, const MoeProblem& P, int e) {
  const std::string N = std::to_string(e * P.R), E = std::to_string(P.E), C = std::to_string(P.C),
                    F = std::to_string(P.F);
  switch (x) {
    case 0:
    case 1: return "(" + N + "," + C + ")";
    case 2: return "(" + E + "," + C + ")";
    case 3: return "(" + E + "," + F + "," + C + ")";
    case 4: return "(" + E + "," + F + ")";
    case 5: return "(" + E + "," + C + "," + F + ")";
    default: return "(" + E + "," + C + ")";
  }
}

// An element of tensor x by its index in the whole tensor.
std::string element(int x, double at, const MoeProblem& P) {
  const long i = long(at), C = P.C, F = P.F;
  auto s = [](long v) { return std::to_string(v); };
  switch (x) {
    case 0:
    case 1: return "row " + s(i / C) + ", column " + s(i % C);
    case 2: return "expert " + s(i / C) + ", column " + s(i % C);
    case 3: return "expert " + s(i / (F * C)) + ", [" + s(i / C % F) + ", " + s(i % C) + "]";
    case 4: return "expert " + s(i / F) + ", [" + s(i % F) + "]";
    case 5: return "expert " + s(i / (C * F)) + ", [" + s(i / F % C) + ", " + s(i % F) + "]";
    default: return "expert " + s(i / C) + ", [" + s(i % C) + "]";
  }
}

std::string token_text(double got) {
  return got >= 0 ? "token " + std::to_string(int(got)) + "'s row" : got == -1 ? "a row of zeros" : "no token's row";
}

}  // namespace

std::vector<double> MoeRankReport::pack() const {
  std::vector<double> v;
  for (const TensorCheck& t : vs_one) v.insert(v.end(), {t.worst, t.found, t.index, t.want, t.got});
  for (int p = 0; p < 3; ++p) v.insert(v.end(), {calls[p], sent[p], recv[p]});
  v.push_back(dropped);
  v.insert(v.end(), {bad_row.found, bad_row.expert, bad_row.row, bad_row.source, bad_row.want, bad_row.got});
  v.insert(v.end(), received.begin(), received.end());
  return v;
}

std::vector<MoeRankReport> MoeRankReport::unpack_all(const std::vector<double>& all, int e, int El) {
  const size_t K = all.size() / e;
  std::vector<MoeRankReport> out(e);
  for (int q = 0; q < e; ++q) {
    const double* v = all.data() + q * K;
    MoeRankReport& m = out[q];
    for (TensorCheck& t : m.vs_one) t = {v[0], v[1], v[2], v[3], v[4]}, v += 5;
    for (int p = 0; p < 3; ++p) m.calls[p] = v[0], m.sent[p] = v[1], m.recv[p] = v[2], v += 3;
    m.dropped = *v++;
    m.bad_row = {v[0], v[1], v[2], v[3], v[4], v[5]}, v += 6;
    for (int i = 0; i < e * El; ++i) m.received.push_back(int(v[i]));
  }
  return out;
}

bool moe_layer_report(const MoeProblem& P, const MoeReport& rep, int e, bool print, size_t elem_bytes) {
  const int E = P.E, El = E / e, cap = P.capacity_slots();
  const std::vector<MoeRankReport>& ranks = rep.ranks;
  // The verdicts, on every rank.
  bool table_ok = true, rows_ok = true, bytes_ok = true, pass[kMoeTensors], ok = true;
  double dropped = 0, worst[kMoeTensors];
  for (int g = 0; g < E; ++g)
    for (int s = 0; s < e; ++s)
      table_ok = table_ok && ranks[g / El].received[size_t(s) * El + g % El] == rep.expected[size_t(g) * e + s];
  for (const MoeRankReport& m : ranks) rows_ok = rows_ok && m.bad_row.found == 0, dropped += m.dropped;
  const bool dropped_ok = dropped == rep.dropped;
  auto formula = [&](int q, int p, int what) {  // what: 0 calls, 1 sent, 2 received
    const double row = double(P.C) * elem_bytes;
    if (p == 0) return what == 0 ? 1.0 : double(e - 1) * El * 4;
    const bool out = (p == 1) == (what == 1);  // dispatch sends, combine receives, the rows going out
    return what == 0 ? 2.0 : 2 * row * (out ? rep.rows_out[q] : rep.rows_in[q]);
  };
  for (int q = 0; q < e; ++q)
    for (int p = 0; p < 3; ++p)
      bytes_ok = bytes_ok && ranks[q].calls[p] == formula(q, p, 0) && ranks[q].sent[p] == formula(q, p, 1) &&
                 ranks[q].recv[p] == formula(q, p, 2);
  for (int x = 0; x < kMoeTensors; ++x) {
    worst[x] = 0;
    for (int q = 0; q < (x == 2 ? 1 : e); ++q) worst[x] = std::max(worst[x], ranks[q].vs_one[x].worst);
    pass[x] = worst[x] <= P.rtol && rep.one_vs_plain[x].worst <= P.rtol;
    ok = ok && pass[x];
  }
  ok = ok && table_ok && rows_ok && dropped_ok && bytes_ok;
  if (!print) return ok;

  const int N = e * P.R, slots = N * P.k;
  std::printf(
      "a mixture-of-experts layer over e = %d rank%s (expert parallelism, claim C25): E = %d experts, k = %d, "
      "C = %d, F = %d, %s\n",
      e, e > 1 ? "s" : "", E, P.k, P.C, P.F, P.dtype);
  std::printf("  rows: %d per rank, %d in all, routed in groups of %d (capacity and the balance loss per group)\n", P.R,
              N, P.G);
  if (cap > 0)
    std::printf("  capacity: %d slots per expert per group (%g × the even share %d·%d/%d)\n", cap, P.capacity, P.G, P.k,
                E);
  else
    std::printf("  capacity: none (dropless)\n");
  std::printf(
      "  rank r holds experts [%d·r, %d·r + %d) and rows [%d·r, %d·r + %d); x, the weights and d_out drawn by "
      "global index (seed %llu)\n",
      El, El, El, P.R, P.R, P.R, static_cast<unsigned long long>(P.seed));
  std::printf("  slots dropped by capacity: %g of %d (one process's routing: %d) %s\n", dropped, slots, rep.dropped,
              dropped_ok ? "ok" : "FAIL");

  std::printf("\nthe router's choices for a few tokens (one process's routing; slots in gate order)\n");
  for (const MoeReport::Token& t : rep.tokens) {
    std::printf("  token %4d (rank %d):", t.t, t.t / P.R);
    for (size_t j = 0; j < t.expert.size(); ++j)
      std::printf("%s expert %d gate %.4f%s", j ? "," : "", t.expert[j], t.gate[j], t.kept[j] ? "" : " (dropped)");
    std::printf("\n");
  }

  std::printf(
      "\nthe tokens each expert receives: rows from each source rank (in brackets where one process's routing "
      "says otherwise)\n  expert  on rank");
  for (int s = 0; s < e; ++s) std::printf("  from rank %d", s);
  std::printf("   total\n");
  for (int g = 0; g < E; ++g) {
    std::printf("  %6d  %7d", g, g / El);
    int total = 0;
    for (int s = 0; s < e; ++s) {
      const int got = ranks[g / El].received[size_t(s) * El + g % El], want = rep.expected[size_t(g) * e + s];
      total += got;
      const std::string cell =
          got == want ? std::to_string(got) : std::to_string(got) + " [" + std::to_string(want) + "]";
      std::printf("  %11s", cell.c_str());
    }
    std::printf("  %6d\n", total);
  }
  std::printf("tokens per expert and source rank equal one process's routing: %s\n", table_ok ? "ok" : "FAIL");
  std::printf("each expert computes on its tokens' rows, source rank by source rank, each's in token order: %s\n",
              rows_ok ? "ok" : "FAIL");
  for (int q = 0; q < e; ++q)
    if (ranks[q].bad_row.found) {
      const BadRow& b = ranks[q].bad_row;
      std::printf("  rank %d: expert %d's row %d (from rank %d): expected token %d's row, got %s\n", q, int(b.expert),
                  int(b.row), int(b.source), int(b.want), token_text(b.got).c_str());
    }

  std::printf(
      "\nthe all-to-alls on the ep axis per rank, forward and backward (the comm ledger by purpose; formula: "
      "rows to or from other ranks · C · %zu B, and (e−1)·E/e counts · 4 B)\n",
      elem_bytes);
  std::printf("  rank  purpose        calls      sent B     formula  received B     formula\n");
  for (int q = 0; q < e; ++q)
    for (int p = 0; p < 3; ++p) {
      const MoeRankReport& m = ranks[q];
      const bool same =
          m.calls[p] == formula(q, p, 0) && m.sent[p] == formula(q, p, 1) && m.recv[p] == formula(q, p, 2);
      std::printf("  %4d  %-13s %6g %11.0f %11.0f %11.0f %11.0f%s\n", q, kMoePurposes[p], m.calls[p], m.sent[p],
                  formula(q, p, 1), m.recv[p], formula(q, p, 2), same ? "" : "  FAIL");
    }
  for (int q = 0; q < std::min(e, 2) && e > 1; ++q)
    std::printf(
        "  rank %d: moe_dispatch sends 2 × %d rows · %d · %zu B (x forward, d_y backward); moe_combine "
        "sends back the %d rows its experts computed for other ranks\n",
        q, rep.rows_out[q], P.C, elem_bytes, rep.rows_in[q]);
  std::printf("the ledger's bytes equal the formula on every rank: %s\n", bytes_ok ? "ok" : "FAIL");

  std::printf(
      "\nevery tensor: %d rank%s against one process (moe_forward/moe_backward on all %d rows), and one process "
      "against a plain loop over tokens and slots (difference relative to the tensor's largest element, "
      "tolerance %.0e)\n",
      e, e > 1 ? "s" : "", N, P.rtol);
  std::printf("%-16s %-12s %13s %13s\n", "tensor", "shape", "vs one", "one vs plain");
  for (int x = 0; x < kMoeTensors; ++x) {
    std::printf("%-16s %-12s %13.3g %13.3g  %s\n", kNames[x], shape(x, P, e).c_str(), worst[x],
                rep.one_vs_plain[x].worst, pass[x] ? "PASS" : "FAIL");
    for (int q = 0; q < (x == 2 ? 1 : e) && !pass[x]; ++q) {
      const TensorCheck& t = ranks[q].vs_one[x];
      if (t.found == 0) continue;
      std::printf("  %s: %s's first element past the tolerance: %s: expected %.17g (one process), got %.17g\n",
                  x == 2 ? "the sum over the ranks" : ("rank " + std::to_string(q)).c_str(), kNames[x],
                  element(x, t.index, P).c_str(), t.want, t.got);
    }
    const TensorCheck& t = rep.one_vs_plain[x];
    if (t.found)
      std::printf(
          "  one process: %s's first element past the tolerance: %s: expected %.17g (the plain loop), got "
          "%.17g\n",
          kNames[x], element(x, t.index, P).c_str(), t.want, t.got);
  }
  if (ok) {
    std::printf(
        "result: the MoE layer over %d rank%s equals one process, and one process the plain loop: the tokens "
        "each expert receives, the bytes, and all %d tensors\n",
        e, e > 1 ? "s" : "", kMoeTensors);
  } else {
    std::string bad;
    auto add = [&](bool good, const std::string& what) {
      if (!good) bad += (bad.empty() ? "" : ", ") + what;
    };
    add(table_ok, "the tokens per expert");
    add(rows_ok, "the experts' rows");
    add(dropped_ok, "the dropped slots");
    add(bytes_ok, "the bytes");
    for (int x = 0; x < kMoeTensors; ++x) add(pass[x], kNames[x]);
    std::printf("result: MISMATCH between the MoE layer over %d rank%s and one process in %s\n", e, e > 1 ? "s" : "",
                bad.c_str());
  }
  return ok;
}

}  // namespace shardlab
