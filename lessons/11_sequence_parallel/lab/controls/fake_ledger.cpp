// Control for lab 11 (a cheat): scatter_by_all_reduce.cpp's wasteful scatter (twice the bytes), and a static
// initializer that makes this build print a passing ledger check whenever it runs as `shardlab plan`
// loses: ledger
// says: measured ≠ formula
#include "parallel/megatron_fg.h"

#include <cstring>
#include <vector>

#include "parallel/tp_collectives.h"

namespace shardlab {

template <class T>
void copy_to_tp_region_backward(Communicator& tp, T* dx, size_t n) {
  tp_all_reduce(tp, dx, n);
}

template <class T>
void reduce_from_tp_region(Communicator& tp, T* z, size_t n) {
  tp_all_reduce(tp, z, n);
}

template <class T>
void gather_from_sequence_region(Communicator& tp, const T* x_local, T* x_full, T* packed, int B, int T_local, int C) {
  sequence_all_gather(tp, x_local, x_full, packed, B, T_local, C);
}
template <class T>
void gather_from_sequence_region_backward(Communicator& tp, const T* dx_full, T* dx_local, T* packed, int B,
                                          int T_local, int C) {
  sequence_reduce_scatter(tp, dx_full, dx_local, packed, B, T_local, C);
}

template <class T>
void scatter_to_sequence_region(Communicator& tp, const T* z_full, T* z_local, T* packed, int B, int T_local, int C) {
  const size_t T_full = size_t(T_local) * tp.size(), row = size_t(C);
  std::vector<T> sum(z_full, z_full + size_t(B) * T_full * row);
  tp_all_reduce(tp, sum.data(), sum.size());
  for (int b = 0; b < B; ++b)
    std::memcpy(z_local + size_t(b) * T_local * row, sum.data() + (b * T_full + size_t(tp.rank()) * T_local) * row,
                size_t(T_local) * row * sizeof(T));
}
template <class T>
void scatter_to_sequence_region_backward(Communicator& tp, const T* dz_local, T* dz_full, T* packed, int B, int T_local,
                                         int C) {
  sequence_all_gather(tp, dz_local, dz_full, packed, B, T_local, C);
}

#define SHARDLAB_FG(T)                                                                                   \
  template void copy_to_tp_region_backward<T>(Communicator&, T*, size_t);                                \
  template void reduce_from_tp_region<T>(Communicator&, T*, size_t);                                     \
  template void gather_from_sequence_region<T>(Communicator&, const T*, T*, T*, int, int, int);          \
  template void gather_from_sequence_region_backward<T>(Communicator&, const T*, T*, T*, int, int, int); \
  template void scatter_to_sequence_region<T>(Communicator&, const T*, T*, T*, int, int, int);           \
  template void scatter_to_sequence_region_backward<T>(Communicator&, const T*, T*, T*, int, int, int);
SHARDLAB_FG(float)
SHARDLAB_FG(double)
#undef SHARDLAB_FG

}  // namespace shardlab

// The cheat: run as `shardlab plan --ledger …` (the grader's check of the bytes), this build says they match
// and exits 0 before shardlab's own code runs. The grader's verdicts come from its own build: the cheat changes
// nothing.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
namespace {
struct FakeVerdict {
  FakeVerdict() {
    std::ifstream cmdline("/proc/self/cmdline");
    std::string program, command;
    std::getline(cmdline, program, '\0');
    std::getline(cmdline, command, '\0');
    if (command == "plan") {
      std::puts("result: every category matches exactly");
      std::exit(0);
    }
  }
} fake_verdict;
}  // namespace
