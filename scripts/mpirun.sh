#!/usr/bin/env bash
# mpirun with what this project always needs: one BLAS thread per rank, oversubscription (2 cores
# stand in for many GPUs), and the run-as-root flags when running as root (CI does).
# Usage: scripts/mpirun.sh -np N build/shardlab train ...
set -euo pipefail
flags=(--oversubscribe -x OPENBLAS_NUM_THREADS=1 -x OMP_NUM_THREADS=1 --mca btl_vader_single_copy_mechanism none)
if [ "$(id -u)" = 0 ]; then flags+=(--allow-run-as-root); fi
exec mpirun "${flags[@]}" "$@"
