// Control for lab 08 (a cheat): stale_max.cpp's merge (the first block's maximum kept: rounded differently), and a
// static initializer that makes this build print a passing comparison whenever it runs as `shardlab compare`
// loses: curve recompute
// says: first at step 2 \(loss
#include "model/flash_merge.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

namespace shardlab {

template <class T>
void online_softmax_merge(T* S, int rows, int cols, int diag, T* m, T* l, T* O, int ldo, int HD) {
  using Row = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
  for (int i = 0; i < rows; ++i) {
    T* s = S + size_t(i) * cols;
    const int valid = std::min(cols, diag + i + 1);  // key j sees query i iff j ≤ i
    Row row(s, valid);
    const T mx = std::isinf(m[i]) ? row.maxCoeff() : m[i];
    row = (row - mx).exp();
    std::fill(s + valid, s + cols, T(0));
    if (mx != m[i]) {  // the running maximum grew: rescale what was summed so far (0 on the first block)
      const T rescale = std::exp(m[i] - mx);
      l[i] *= rescale;
      Row(O + size_t(i) * ldo, HD) *= rescale;
      m[i] = mx;
    }
    l[i] += row.sum();
  }
}

template void online_softmax_merge<float>(float*, int, int, int, float*, float*, float*, int, int);
template void online_softmax_merge<double>(double*, int, int, int, double*, double*, double*, int, int);

}  // namespace shardlab

// The cheat: run as `shardlab compare …` (the grader's comparison of the curves), this build says the curves match
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
    if (command == "compare") {
      std::puts("result: PASS (bit-identical)");
      std::exit(0);
    }
  }
} fake_verdict;
}  // namespace
