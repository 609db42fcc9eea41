#!/usr/bin/env bash
# Records every reference curve again (tests/data/reference/*/loss.csv) from its run.txt, the way
# tests/cli/reference_curves.sh checks them: the avx2-fma build and OpenBLAS's Haswell kernel. Only for a
# change that is meant to alter the training arithmetic; say in README.md below what changed and by how much.
set -euo pipefail
cd "$(dirname "$0")/../../.."
export OPENBLAS_CORETYPE=Haswell OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
S=build/shardlab
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for dir in tests/data/reference/*/; do
  name=$(basename "$dir")
  read -r np flags <"$dir/run.txt"
  # shellcheck disable=SC2086
  if [ "$np" = 1 ]; then "$S" train $flags --out "$tmp/$name" >"$tmp/$name.log"
  else bash scripts/mpirun.sh -np "$np" "$S" train $flags --out "$tmp/$name" >"$tmp/$name.log"; fi
  grep -q "^compute: avx2-fma build; OpenBLAS Haswell kernel" "$tmp/$name.log" ||
    { echo "record: $name ran on '$(grep '^compute:' "$tmp/$name.log")', not the avx2-fma build with the Haswell kernel"; exit 1; }
  cp "$tmp/$name/loss.csv" "$dir/loss.csv"
  echo "recorded $name ($np rank(s))"
done
