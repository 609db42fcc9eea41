#!/usr/bin/env bash
# mpirun with what this project always needs: one BLAS thread per rank, oversubscription (2 cores
# stand in for many GPUs), the run-as-root flags when running as root (CI does), and whether our
# stdout is a terminal.
# Usage: scripts/mpirun.sh -np N build/shardlab train ...
set -euo pipefail
flags=(--oversubscribe -x OPENBLAS_NUM_THREADS=1 -x OMP_NUM_THREADS=1 --mca btl_vader_single_copy_mechanism none)
# On one host: OpenMPI's own point-to-point layer over shared memory (pml ob1, btl self,vader). Left to
# itself, OpenMPI first probes UCX, which doubles every launch (0.47 s against 0.26 s for 2 ranks). An
# --mca pml/btl of the caller (e.g. btl tcp,self across hosts: scripts/two_hosts.sh) takes precedence.
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1} OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
# The BLAS kernel a caller pinned (tests, make test-kernels) reaches every rank; else each rank chooses.
if [ -n "${OPENBLAS_CORETYPE:-}" ]; then flags+=(-x OPENBLAS_CORETYPE); fi
if [ "$(id -u)" = 0 ]; then flags+=(--allow-run-as-root); fi
# Ranks' stdout is a pseudo-terminal under mpirun; tell them whether ours really is (progress bar or lines).
if [ -t 1 ]; then export SHARDLAB_STDOUT_TTY=1; else export SHARDLAB_STDOUT_TTY=0; fi
flags+=(-x SHARDLAB_STDOUT_TTY)
exec mpirun "${flags[@]}" "$@"
