#!/usr/bin/env bash
# Prints the instruction set `make` builds for (the Makefile's ARCH): "avx2-fma" on an x86-64 CPU with AVX2
# and FMA — one target for all of them, so a run gives the same bits on each — else "native".
if [ "$(uname -m)" = x86_64 ] && grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo 2>/dev/null; then
  echo avx2-fma
else
  echo native
fi
