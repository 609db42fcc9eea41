#!/usr/bin/env bash
# Reference loss curves (tests/data/reference/): every run recorded there is trained again with the same
# flags on the same number of ranks, and its loss.csv must equal the recorded one bit for bit in every
# column but ms (wall-clock). This catches any refactor that changes a single number of the training
# arithmetic. The numbers are those of the avx2-fma build (the Makefile's default on x86-64 CPUs with AVX2
# and FMA) with OpenBLAS's Haswell kernel, which every such CPU can run: pinned here, so the curves hold on
# any of them, whatever kernel the CPU would choose. Other builds (make ARCH=native, other CPUs) compute
# other roundings: the script says so in one line and checks nothing.
# Prints one `ok - ...` / `FAIL - ... (why)` line per run; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
export OPENBLAS_CORETYPE=Haswell
R=tests/data/reference
want="compute: avx2-fma build; OpenBLAS Haswell kernel"
strip_ms() { cut -d, -f1-4,6 "$1"; }  # step,loss,grad_norm,lr,val_loss
for dir in "$R"/*/; do
  name=$(basename "$dir")
  read -r np flags <"$dir/run.txt"
  out=$tmp/$name
  # shellcheck disable=SC2086
  if [ "$np" = 1 ]; then
    timeout 120 "$S" train $flags --out "$out" >"$out.log" 2>&1
  else
    timeout 120 bash scripts/mpirun.sh -np "$np" "$S" train $flags --out "$out" >"$out.log" 2>&1
  fi
  rc=$?
  if [ $rc != 0 ]; then fail "$name: trains" "exit $rc: $(last "$out.log")"; continue; fi
  compute=$(grep -m1 '^compute:' "$out.log")
  if [[ $compute != "$want"* ]]; then
    if [[ $compute == "compute: avx2-fma build;"* ]]; then
      fail "$name: runs on the pinned kernel" "OPENBLAS_CORETYPE=Haswell did not take: '$compute'"
      continue
    fi
    echo "skip - the recorded curves are the avx2-fma build's; this is '${compute#compute: }' (nothing checked)"
    exit 0
  fi
  if diff <(strip_ms "$dir/loss.csv") <(strip_ms "$out/loss.csv") >"$out.diff"; then
    ok "$name ($np rank(s)): $(($(wc -l <"$dir/loss.csv") - 1)) steps bit-identical to the recorded curve"
  else
    fail "$name ($np rank(s)): bit-identical to the recorded curve" \
      "$(grep -c '^<' "$out.diff") rows differ; first, recorded vs now: $(grep -m1 '^<' "$out.diff" | cut -c3-) vs $(grep -m1 '^>' "$out.diff" | cut -c3-)"
  fi
done
[ "$fails" = 0 ]
