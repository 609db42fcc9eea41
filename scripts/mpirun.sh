#!/usr/bin/env bash
# mpirun with what this project always needs: one BLAS thread per rank, oversubscription (2 cores
# stand in for many GPUs), the run-as-root flags when running as root (CI does), and whether our
# stdout is a terminal.
# Usage: scripts/mpirun.sh -np N build/shardlab train ...
set -euo pipefail
flags=(--oversubscribe -x OPENBLAS_NUM_THREADS=1 -x OMP_NUM_THREADS=1 --mca btl_vader_single_copy_mechanism none)
if [ "$(id -u)" = 0 ]; then flags+=(--allow-run-as-root); fi
# Ranks' stdout is a pseudo-terminal under mpirun; tell them whether ours really is (progress bar or lines).
if [ -t 1 ]; then export SHARDLAB_STDOUT_TTY=1; else export SHARDLAB_STDOUT_TTY=0; fi
flags+=(-x SHARDLAB_STDOUT_TTY)
exec mpirun "${flags[@]}" "$@"
