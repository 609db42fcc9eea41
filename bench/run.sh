#!/usr/bin/env bash
# `make bench`: single rank, one BLAS thread. Tokens/s and achieved model GFLOP/s beside the
# machine's OpenBLAS sgemm GFLOP/s, measured in the same process. Target: ≥ 80% on the larger config.
set -euo pipefail
cd "$(dirname "$0")/.."
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
build/shardlab bench --layers 4 --hidden 256 --heads 4 --seq 128 --micro-batch 8 --steps 10
build/shardlab bench --layers 6 --hidden 512 --heads 8 --seq 256 --micro-batch 8 --steps 4
