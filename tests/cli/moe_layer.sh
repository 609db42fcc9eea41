#!/usr/bin/env bash
# `shardlab moe-layer` (claim C25): one mixture-of-experts layer with its experts over e = 1, 2, 4 ranks equals one
# process in f64 within 1e-12 (and f32 within 1e-5 at e = 4), dropless and with a capacity that drops slots — the
# rows each expert receives per source rank are one process's routing, each its token's row, and every tensor
# (output, d_x, the router's and the experts' weight gradients) agrees; the table it prints is the routing (rank 0's
# rows go to the same experts at e = 1, 2, 4: groups are per sample) and the all-to-alls' bytes in the comm ledger are
# 2 · rows to other ranks' experts · C · 8 B, counted here from that table; --rtol 0 fails on the 1e-16 between one
# process and the plain loop (so the verdicts can fail) and names the first elements; bad flags are one line from
# rank 0, exit 2. A wrong dispatch or combine is caught by lab 15's controls (tests/cli/labs_kernels.sh).
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
if ! command -v mpirun >/dev/null 2>&1; then echo "FAIL - mpirun exists (no OpenMPI: make deps installs it)"; exit 1; fi
mpi() {  # NP CMD…: under mpirun, or alone for one rank (a world of one, without mpirun's start-up)
  local np=$1
  shift
  if [ "$np" = 1 ]; then timeout -k 5 60 "$@" </dev/null; else timeout -k 5 60 bash scripts/mpirun.sh -np "$np" "$@" </dev/null; fi
}
verdicts() { grep -E '^(output|d_)' "$1" | awk '{printf "%s %s %s %s; ", $1, $3, $4, $NF}'; }
passes() {  # LOG: exit 0, seven tensors PASS, the tokens, the rows and the bytes ok
  [ "$(grep -cE '^(output|d_).* PASS$' "$1")" = 7 ] && grep -q '^tokens per expert .*: ok$' "$1" &&
    grep -q '^each expert computes on .*: ok$' "$1" && grep -q "^the ledger's bytes equal the formula .*: ok$" "$1" &&
    grep -q '^result: the MoE layer over' "$1"
}

# ---------------------------------------------------------------- the layer over 1, 2, 4 ranks
for e in 1 2 4; do
  log=$tmp/moe_$e.log
  if mpi "$e" "$S" moe-layer >"$log" 2>&1 && passes "$log"; then
    ok "e = $e, f64: the tokens each expert receives, the bytes, and the seven tensors within 1e-12 ($(verdicts "$log"))"
  else
    fail "e = $e, f64: everything agrees with one process" "$(verdicts "$log")$(last "$log")"
  fi
done
log=$tmp/moe_cap.log
dropped=0
if mpi 2 "$S" moe-layer --capacity 1 >"$log" 2>&1 && passes "$log"; then
  dropped=$(sed -nE 's/^  slots dropped by capacity: ([0-9]+) of [0-9]+ \(one process.s routing: \1\) ok$/\1/p' "$log")
fi
if [ "${dropped:-0}" -gt 0 ] && grep -q '^  capacity: 4 slots per expert per group (1 × the even share 16·2/8)$' "$log"; then
  ok "e = 2, --capacity 1 (4 slots per expert per group of 16): $dropped slots dropped, as on one process; everything agrees"
else
  fail "e = 2, --capacity 1: slots dropped and everything agrees" "dropped '$dropped'; $(verdicts "$log")$(last "$log")"
fi
log=$tmp/moe_f32.log
if mpi 4 "$S" moe-layer --dtype f32 >"$log" 2>&1 && passes "$log" && grep -q 'tolerance 1e-05' "$log"; then
  ok "e = 4, f32: everything agrees within 1e-5 ($(verdicts "$log"))"
else
  fail "e = 4, f32: everything agrees within 1e-5" "$(verdicts "$log")$(last "$log")"
fi

# ---------------------------------------------------------------- the table is the routing; the bytes follow from it
# column LOG N: the table's column N (3: from rank 0), one value per expert.
column() { awk -v n="$2" '/^  expert  on rank/ { t = 1; next } t && /^ +[0-9]+ +[0-9]+ / { printf "%s ", $n } /^tokens per/ { t = 0 }' "$1"; }
c1=$(column "$tmp/moe_1.log" 3) c2=$(column "$tmp/moe_2.log" 3) c4=$(column "$tmp/moe_4.log" 3)
if [ -n "$c1" ] && [ "$c1" = "$c2" ] && [ "$c1" = "$c4" ] && [ "$(wc -w <<<"$c1")" = 8 ]; then
  ok "rank 0's rows reach the same experts at e = 1, 2, 4 (routing per group): $c1"
else
  fail "rank 0's rows reach the same experts at e = 1, 2, 4" "e = 1: $c1; e = 2: $c2; e = 4: $c4"
fi
# At e = 2 rank 0 sends the rows of its column for experts 4..7 (rank 1's), forward (x) and backward (d_y): · 16 · 8 B.
rows=$(awk '/^  expert  on rank/ { t = 1; next } t && /^ +[4-7] +1 / { s += $3 } /^tokens per/ { t = 0 } END { print s + 0 }' "$tmp/moe_2.log")
sent=$(awk '$1 == 0 && $2 == "moe_dispatch" { print $4 }' "$tmp/moe_2.log")
back=$(awk '$1 == 0 && $2 == "moe_combine" { print $6 }' "$tmp/moe_2.log")
if [ "$rows" -gt 0 ] && [ "$sent" = $((2 * rows * 16 * 8)) ] && [ "$back" = "$sent" ]; then
  ok "e = 2: rank 0's moe_dispatch sends 2 × $rows rows (the table: its rows to experts 4..7) × 16 × 8 B = $sent B; moe_combine brings as much back"
else
  fail "e = 2: rank 0's all-to-all bytes follow from the table" "rows $rows, dispatch sent $sent, combine received $back"
fi

# ---------------------------------------------------------------- the verdicts can fail
log=$tmp/moe_tight.log
mpi 2 "$S" moe-layer --rtol 0 >"$log" 2>&1
rc=$?
# Which tensors differ in their last bits depends on the BLAS kernel (an AVX-512 one gives the output exactly):
# any of them, named with its first element, will do.
if [ $rc = 1 ] && grep -q '^result: MISMATCH' "$log" &&
  grep -qE "^  one process: [a-z_.]+'s first element past the tolerance: row [0-9]+, column [0-9]+: expected -?[0-9].* \(the plain loop\), got -?[0-9]" "$log"; then
  ok "--rtol 0 (the plain loop adds in another order): exit 1, the tensors FAIL, the first elements named"
else
  fail "--rtol 0: exit 1 naming the first elements" "exit $rc; $(verdicts "$log")$(grep -m1 'first element' "$log")"
fi

# ---------------------------------------------------------------- bad flags
bad() {  # bad NAME NP PATTERN FLAGS...: exit 2, one line naming shardlab, matching PATTERN
  local name=$1 np=$2 pattern=$3 rc
  shift 3
  mpi "$np" "$S" moe-layer "$@" >"$tmp/bad.out" 2>&1
  rc=$?
  if [ $rc = 2 ] && [ "$(grep -c shardlab "$tmp/bad.out")" = 1 ] && grep -qE -- "$pattern" "$tmp/bad.out"; then
    ok "$name: exit 2, one line ($(grep shardlab "$tmp/bad.out"))"
  else
    fail "$name: exit 2, one line" "exit $rc: $(grep shardlab "$tmp/bad.out" | head -n 3 | tr '\n' '|')"
  fi
}
bad "-np 3 with 8 experts" 3 "--experts 8 is not divisible by the 3 ranks" --experts 8
bad "--top-k 5 of 4 experts" 2 "--top-k 5 must be between 1 and --experts 4" --experts 4 --top-k 5
bad "--rows 30 in groups of 16" 2 "--rows 30 \(per rank\) is not a whole number of routing groups of --group 16" --rows 30
bad "--capacity -1" 1 "--capacity must be ≥ 0" --capacity -1
bad "--experts 0" 2 "--experts" --experts 0
bad "--dtype f16" 1 "--dtype .*f32\|f64" --dtype f16
[ "$fails" = 0 ]
