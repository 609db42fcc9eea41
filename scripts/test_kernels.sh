#!/usr/bin/env bash
# `make test-kernels`: the bit-identity suites — the MPI suite (np 1…8: pipelines, ZeRO vs DP, the
# layout-independent norm, determinism) and tests/cli/bit_identity.sh (the same promises end to end) — under
# every OpenBLAS kernel this CPU can run, and under the automatic choice (core/blas_kernel.h). Layouts must
# agree to the last bit whatever kernel computes the products. One line per kernel and suite; exits non-zero
# if any fails. KERNELS="Prescott Haswell" runs a subset.
set -uo pipefail
cd "$(dirname "$0")/.."
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
has() { grep -qw "$1" /proc/cpuinfo 2>/dev/null; }
if [ -z "${KERNELS:-}" ]; then
  KERNELS=""
  if [ "$(uname -m)" = x86_64 ]; then
    KERNELS="Prescott"
    has avx && KERNELS+=" Sandybridge"
    has avx2 && has fma && KERNELS+=" Haswell Zen"
    has avx512f && has avx512bw && has avx512cd && has avx512dq && has avx512vl && KERNELS+=" SkylakeX"
    has avx512f && has avx512_bf16 && KERNELS+=" Cooperlake"
  fi
  KERNELS+=" auto"
fi
echo "kernels this CPU can run: $KERNELS"
failed=0
for k in $KERNELS; do
  if [ "$k" = auto ]; then unset OPENBLAS_CORETYPE; else export OPENBLAS_CORETYPE=$k; fi
  log=build/test_kernels/$k
  mkdir -p "$log"
  start=$(date +%s)
  if bash scripts/mpi_tests.sh build/mpi_tests >"$log/mpi.log" 2>&1; then mpi=PASS; else mpi=FAIL; failed=$((failed + 1)); fi
  if bash tests/cli/bit_identity.sh >"$log/cli.log" 2>&1; then cli=PASS; else cli=FAIL; failed=$((failed + 1)); fi
  echo "kernel $k ($(sed -n 's/^# //p' "$log/cli.log" | head -n 1)): mpi tests $mpi, bit identity $cli ($(($(date +%s) - start))s)"
  [ $mpi = PASS ] || grep -E "FAIL" "$log/mpi.log" | head -n 5 | sed 's/^/    /'
  [ $cli = PASS ] || grep -E "^FAIL" "$log/cli.log" | head -n 5 | sed 's/^/    /'
done
echo "test-kernels: $failed failed"
[ "$failed" = 0 ]
