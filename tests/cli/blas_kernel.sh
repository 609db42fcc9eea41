#!/usr/bin/env bash
# The GEMM kernel chosen by the CPU's features (src/core/blas_kernel.h):
#  (1) left to itself, a run's header names a kernel of the widest vector instructions the CPU has (read here
#      from /proc/cpuinfo, apart from the cpuid code under test);
#  (2) an OpenBLAS that does not know the CPU — simulated by preloading tests/cli/support/old_blas_choice.c,
#      which answers "Prescott" as OpenBLAS does for a model it doesn't know — is overruled: every process
#      starts again with the best kernel before MPI starts (train on 1 process and on 2 ranks, eval, sample,
#      bench, both test binaries), and the header says which kernel and what OpenBLAS had picked;
#  (3) a user's own OPENBLAS_CORETYPE is kept, named in the header, and nothing restarts;
#  (4) bench names the kernel and reports GFLOP/s as a share of the FMA peak it measured.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
unset OPENBLAS_CORETYPE SHARDLAB_BLAS_CHOSEN SHARDLAB_BLAS_FALLBACK
has() { grep -qw "$1" /proc/cpuinfo 2>/dev/null; }
if [ "$(uname -m)" != x86_64 ]; then
  echo "skip - no x86-64 CPU: OpenBLAS's own choice stands, nothing to check"
  exit 0
fi
best=Prescott isa=SSE
has avx && best=Sandybridge isa=AVX
has avx2 && has fma && best=Haswell isa=AVX2
if has avx512f && has avx512bw && has avx512cd && has avx512dq && has avx512vl; then
  isa=AVX-512 best=SkylakeX
  has avx512_bf16 && best=Cooperlake
fi
T=(--layers 1 --hidden 32 --heads 2 --seq 16 --micro-batch 2 --global-batch 4 --steps 2 --eval-windows 0 --progress none
   --data "$tmp/small.txt")
compute() { grep -m1 '^compute:' "$1" | sed 's/^compute: //'; }

# (1)
"$S" train "${T[@]}" >"$tmp/auto.log" 2>&1
line=$(compute "$tmp/auto.log")
if [[ $line == *"kernel ($isa),"* ]]; then ok "(1) left to itself: $line"
else fail "(1) left to itself, a kernel of the CPU's widest vectors ($isa)" "'$line'"; fi

# (2)
cc -shared -fPIC -o "$tmp/old_blas_choice.so" tests/cli/support/old_blas_choice.c -ldl 2>"$tmp/cc.err" ||
  { fail "(2) the preload library builds" "$(head -n 3 "$tmp/cc.err" | tr '\n' '|')"; exit 1; }
export SHARDLAB_TEST_KERNEL_LOG=$tmp/starts.log
old() { LD_PRELOAD=$tmp/old_blas_choice.so "$@"; }
# restarted NAME PROGRAM COUNT: COUNT processes named PROGRAM each logged twice — first without a kernel, then,
# with the same pid, with the best one.
restarted() {
  local name=$1 prog=$2 count=$3 got
  got=$(awk -v p="$prog" -v b="$best" '$2 == p { seen[$1] = seen[$1] " " $3 } END {
          n = 0; for (pid in seen) if (seen[pid] == " - " b) n++; print n }' "$SHARDLAB_TEST_KERNEL_LOG")
  if [ "$best" = Prescott ]; then got=$count; fi  # nothing wider to choose: no restart expected
  if [ "$got" = "$count" ]; then ok "$name: $count process(es) started again with $best before doing anything"
  else fail "$name: $count process(es) started again with $best" "$got did: $(tr '\n' '|' <"$SHARDLAB_TEST_KERNEL_LOG")"; fi
  : >"$SHARDLAB_TEST_KERNEL_LOG"
}
: >"$SHARDLAB_TEST_KERNEL_LOG"
old "$S" train "${T[@]}" --out "$tmp/run" --save "$tmp/ck" >"$tmp/old.log" 2>&1
line=$(compute "$tmp/old.log")
want="OpenBLAS $best kernel ($isa), chosen by the CPU's features ($isa"
[ "$best" = Prescott ] && want="OpenBLAS Prescott kernel (SSE), OpenBLAS's choice"
if [[ $line == *"$want"* ]]; then ok "(2) an older choice of OpenBLAS overruled: $line"
else fail "(2) an older choice of OpenBLAS overruled" "expected '$want…', got '$line'"; fi
restarted "(2) train, one process" shardlab 1
old bash scripts/mpirun.sh -np 2 -x LD_PRELOAD -x SHARDLAB_TEST_KERNEL_LOG "$S" train "${T[@]}" >"$tmp/old2.log" 2>&1
rc=$?
if [ $rc = 0 ] && [[ $(compute "$tmp/old2.log") == *"$want"* ]]; then ok "(2) train on 2 ranks: exit 0, the same kernel"
else fail "(2) train on 2 ranks" "exit $rc: $(compute "$tmp/old2.log") $(last "$tmp/old2.log")"; fi
restarted "(2) train on 2 ranks under mpirun" shardlab 2
old "$S" eval --load "$tmp/ck" --data "$tmp/small.txt" >"$tmp/eval.log" 2>&1 || fail "(2) eval runs" "$(last "$tmp/eval.log")"
restarted "(2) eval" shardlab 1
old "$S" sample --load "$tmp/ck" --prompt "a" --tokens 4 >"$tmp/sample.log" 2>&1 || fail "(2) sample runs" "$(last "$tmp/sample.log")"
restarted "(2) sample" shardlab 1
old "$S" bench --layers 1 --hidden 32 --heads 2 --seq 16 --micro-batch 2 --steps 1 >"$tmp/bench_old.log" 2>&1 ||
  fail "(2) bench runs" "$(last "$tmp/bench_old.log")"
restarted "(2) bench" shardlab 1
old build/unit_tests "[core]" >"$tmp/unit.log" 2>&1 || fail "(2) unit_tests run" "$(last "$tmp/unit.log")"
restarted "(2) build/unit_tests" unit_tests 1
old bash scripts/mpirun.sh -np 2 -x LD_PRELOAD -x SHARDLAB_TEST_KERNEL_LOG build/mpi_tests "[sum]" >"$tmp/mpi.log" 2>&1 ||
  fail "(2) mpi_tests run" "$(last "$tmp/mpi.log")"
restarted "(2) build/mpi_tests on 2 ranks" mpi_tests 2

# (3)
OPENBLAS_CORETYPE=Prescott old "$S" train "${T[@]}" >"$tmp/user.log" 2>&1
line=$(compute "$tmp/user.log")
starts=$(awk '$2 == "shardlab"' "$SHARDLAB_TEST_KERNEL_LOG" | wc -l)
if [[ $line == *"OpenBLAS Prescott kernel (SSE), set by OPENBLAS_CORETYPE=Prescott"* ]] && [ "$starts" = 1 ]; then
  ok "(3) OPENBLAS_CORETYPE=Prescott kept, started once: $line"
else fail "(3) OPENBLAS_CORETYPE=Prescott kept, started once" "started $starts time(s): '$line'"; fi

# A name OpenBLAS has no kernel for is ignored by it: the header says so, never "set by" it.
OPENBLAS_CORETYPE=Bogus old "$S" train "${T[@]}" >"$tmp/bogus.log" 2>&1
line=$(compute "$tmp/bogus.log")
if [[ $line == *"OpenBLAS's choice: it has no kernel named OPENBLAS_CORETYPE=Bogus"* ]] && [[ $line != *"set by"* ]]; then
  ok "(3) OPENBLAS_CORETYPE=Bogus: reported as OpenBLAS's own choice, naming the value it ignored"
else fail "(3) OPENBLAS_CORETYPE=Bogus reported as ignored" "'$line'"; fi

# (4)
"$S" bench --layers 1 --hidden 64 --heads 2 --seq 32 --micro-batch 4 --steps 2 >"$tmp/bench.log" 2>&1
if grep -q "kernel ($isa)" "$tmp/bench.log" && grep -Eq "^  fma peak +[0-9.]+ GFLOP/s" "$tmp/bench.log" &&
  grep -Eq "^  training .* = [0-9.]+% of peak" "$tmp/bench.log" && grep -Eq "^  sgemm .* = [0-9.]+% of peak" "$tmp/bench.log"; then
  ok "(4) bench: $(grep -E '^  fma peak' "$tmp/bench.log" | sed 's/^ *//' | cut -c1-60); training and sgemm as shares of it"
else
  fail "(4) bench names the kernel and the FMA peak" "$(tr '\n' '|' <"$tmp/bench.log")"
fi
[ "$fails" = 0 ]
