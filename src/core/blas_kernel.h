// Which OpenBLAS kernel runs every GEMM, chosen by what the CPU can do. OpenBLAS (built with DYNAMIC_ARCH,
// as Debian ships it) picks a kernel when the library loads, from the CPU's model number; a model newer
// than the library falls back to an older kernel (Debian 12's 0.3.21 runs SSE3 "Prescott" kernels on
// recent Intel Xeons and AVX2 "Haswell" kernels on AVX-512 AMD EPYCs: 2–5× below the machine). So, first
// thing in main(), before MPI starts and before any GEMM: when the CPU supports a wider kernel than the one
// OpenBLAS picked, the process starts itself again (execv, same pid, same arguments) with OPENBLAS_CORETYPE
// naming the best kernel for its features — AVX-512 → SkylakeX (Cooperlake with AVX512_BF16), AVX2 + FMA →
// Haswell, AVX → Sandybridge, SSE3 → Prescott — the mapping upstream OpenBLAS itself adopted for CPUs it
// detects by features. A user's own OPENBLAS_CORETYPE is always respected. Other architectures, or a BLAS
// without DYNAMIC_ARCH: nothing to choose, the BLAS's own choice stands.
#pragma once
#include <string>

namespace shardlab {

// Call first in main(). Returns only when this process keeps its kernel (or could not restart).
void use_best_blas_kernel(char** argv);

struct BlasKernel {
  std::string name;  // the kernel every GEMM runs now, as OpenBLAS names it ("SkylakeX")
  std::string isa;   // its vector instructions ("AVX-512"), "" when not an x86 kernel we know
  std::string how;   // how it was chosen, a phrase for the run header and bench
  std::string describe() const {
    return "OpenBLAS " + name + " kernel" + (isa.empty() ? "" : " (" + isa + ")") + ", " + how;
  }
};
const BlasKernel& blas_kernel();

// The best OpenBLAS kernel for this CPU's features ("" where there is nothing to choose), and the vector
// tier of a kernel's name: 4 AVX-512, 3 AVX2, 2 AVX, 1 SSE, 0 unknown.
std::string best_blas_kernel();
int blas_kernel_tier(const std::string& name);

}  // namespace shardlab
