/* For tests/cli/blas_kernel.sh: makes the OpenBLAS of this machine look like one that does not know its CPU.
 * Preloaded (LD_PRELOAD), it answers openblas_get_corename() with "Prescott" — OpenBLAS's fallback for models it
 * does not know — unless OPENBLAS_CORETYPE is set, when the real library's answer is given. Every process that
 * loads it appends "<pid> <program> <OPENBLAS_CORETYPE or -> " to the file SHARDLAB_TEST_KERNEL_LOG names, so the
 * test sees each process start and, after a restart, start again with the kernel chosen. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

char* openblas_get_corename(void) {
  if (!getenv("OPENBLAS_CORETYPE")) return "Prescott";
  char* (*real)(void) = (char* (*)(void))dlsym(RTLD_NEXT, "openblas_get_corename");
  return real ? real() : "unknown";
}

__attribute__((constructor)) static void log_start(void) {
  const char* path = getenv("SHARDLAB_TEST_KERNEL_LOG");
  if (!path) return;
  FILE* f = fopen(path, "a");
  if (!f) return;
  const char* k = getenv("OPENBLAS_CORETYPE");
  fprintf(f, "%d %s %s\n", (int)getpid(), program_invocation_short_name, k ? k : "-");
  fclose(f);
}
