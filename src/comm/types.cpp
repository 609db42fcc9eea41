// The element types the Communicator carries: their MPI datatype and their sum kernel (see mpi_handle.h).
// bf16 sums widen both operands to float, add, and round back to nearest even — after every single
// addition, exactly as a ring of bf16 buffers on real accelerators does. Integer sums wrap (as MPI's).
// Besides the sums, a maximum for float and double (the vocabulary-parallel cross-entropy's row maxima):
// exact, so its result never depends on the order. ExactSum (core/exact_sum.h, the exact mode's order-free
// sums) travels as one 32-byte MPI datatype and is "added" by exact_merge, on the ring and in a user-defined
// MPI_Op alike: whatever order either adds in, the bits are the same. Leaves out: min, product.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <type_traits>

#include "comm/communicator.h"
#include "comm/mpi_handle.h"
#include "core/bf16.h"
#include "core/exact_sum.h"

namespace shardlab {
namespace detail {

namespace {

template <class T>
void add_kernel(void* acc, const void* in, size_t n) {
  T* __restrict a = static_cast<T*>(acc);
  const T* __restrict b = static_cast<const T*>(in);
  for (size_t i = 0; i < n; ++i) a[i] = static_cast<T>(a[i] + b[i]);
}

template <class T>
void max_kernel(void* acc, const void* in, size_t n) {
  T* __restrict a = static_cast<T*>(acc);
  const T* __restrict b = static_cast<const T*>(in);
  for (size_t i = 0; i < n; ++i) a[i] = b[i] > a[i] ? b[i] : a[i];
}

void add_bf16(void* acc, const void* in, size_t n) {
  bf16* __restrict a = static_cast<bf16*>(acc);
  const bf16* __restrict b = static_cast<const bf16*>(in);
  for (size_t i = 0; i < n; ++i) a[i] = to_bf16(from_bf16(a[i]) + from_bf16(b[i]));
}

MPI_Op mpi_sum() { return MPI_SUM; }
MPI_Op mpi_max() { return MPI_MAX; }

// The same widen-add-round as a user-defined MPI_Op, so --comm mpi rounds bf16 like the ring does
// (MPI decides the order of additions there, so only integer-valued sums are guaranteed equal).
void bf16_user_op(void* in, void* inout, int* len, MPI_Datatype*) { add_bf16(inout, in, static_cast<size_t>(*len)); }

MPI_Op bf16_sum() {
  static MPI_Op op = MPI_OP_NULL;
  if (op == MPI_OP_NULL) MPI_Op_create(&bf16_user_op, /*commute=*/1, &op);
  return op;
}

// acc[i] += in[i] for ExactSums: the array exact_merge in place when both buffers are aligned for ExactSum (the
// ring's always are), otherwise each element copied in and out (a buffer MPI hands a user op promises no
// alignment). Past ExactSum::kMaxTerms terms the job ends, named (an exception cannot cross MPI's C frames,
// and the other members could not go on without this one anyway).
void merge_exact_sums(void* acc, const void* in, size_t n) {
  char* a = static_cast<char*>(acc);
  const char* b = static_cast<const char*>(in);
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % alignof(ExactSum) == 0; };
  try {
    if (aligned(a) && aligned(b)) {
      exact_merge(static_cast<ExactSum*>(acc), static_cast<const ExactSum*>(in), n);
      return;
    }
    for (size_t i = 0; i < n; ++i) {
      ExactSum sum, more;
      std::memcpy(&sum, a + i * sizeof(ExactSum), sizeof(ExactSum));
      std::memcpy(&more, b + i * sizeof(ExactSum), sizeof(ExactSum));
      exact_merge(sum, more);
      std::memcpy(a + i * sizeof(ExactSum), &sum, sizeof(ExactSum));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardlab: error: reducing exact sums: %s\n", e.what());
    abort_all(2);
  }
}

void exact_sum_user_op(void* in, void* inout, int* len, MPI_Datatype*) {
  merge_exact_sums(inout, in, static_cast<size_t>(*len));
}

// exact_merge is commutative and associative (to the last bit), so MPI may add in any order.
MPI_Op exact_sum_mpi_op() {
  static MPI_Op op = MPI_OP_NULL;
  if (op == MPI_OP_NULL) MPI_Op_create(&exact_sum_user_op, /*commute=*/1, &op);
  return op;
}

// 32 contiguous bytes, created and committed at the first call under MPI (MPI frees it at MPI_Finalize).
MPI_Datatype exact_sum_datatype() {
  static MPI_Datatype type = MPI_DATATYPE_NULL;
  if (type == MPI_DATATYPE_NULL) {
    MPI_Type_contiguous(static_cast<int>(sizeof(ExactSum)), MPI_BYTE, &type);
    MPI_Type_commit(&type);
  }
  return type;
}

bool mpi_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

// MPI's predefined datatypes are link-time objects in some MPIs, so look them up at call time.
template <class T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<float>() {
  return MPI_FLOAT;
}
template <>
MPI_Datatype mpi_type<double>() {
  return MPI_DOUBLE;
}
template <>
MPI_Datatype mpi_type<int32_t>() {
  return MPI_INT32_T;
}
template <>
MPI_Datatype mpi_type<int64_t>() {
  return MPI_INT64_T;
}
template <>
MPI_Datatype mpi_type<uint64_t>() {
  return MPI_UINT64_T;
}
template <>
MPI_Datatype mpi_type<uint8_t>() {
  return MPI_UINT8_T;
}
template <>
MPI_Datatype mpi_type<char>() {
  return std::is_signed<char>::value ? MPI_SIGNED_CHAR : MPI_UNSIGNED_CHAR;
}

}  // namespace

template <class T>
const TypeOps& type_ops() {
  static const TypeOps ops{sizeof(T), mpi_type<T>(), &add_kernel<T>, &mpi_sum};
  return ops;
}

template <class T>
const TypeOps& max_ops() {
  static const TypeOps ops{sizeof(T), mpi_type<T>(), &max_kernel<T>, &mpi_max};
  return ops;
}
template const TypeOps& max_ops<float>();
template const TypeOps& max_ops<double>();

// bf16 is uint16_t: every uint16_t buffer is treated as bf16.
template <>
const TypeOps& type_ops<bf16>() {
  static const TypeOps ops{sizeof(bf16), MPI_UINT16_T, &add_bf16, &bf16_sum};
  return ops;
}

// The datatype is looked up at call time: a world of one without MPI (which never sends) must not create it.
template <>
const TypeOps& type_ops<ExactSum>() {
  static TypeOps ops{sizeof(ExactSum), MPI_DATATYPE_NULL, &merge_exact_sums, &exact_sum_mpi_op};
  if (ops.type == MPI_DATATYPE_NULL && mpi_running()) ops.type = exact_sum_datatype();
  return ops;
}

template const TypeOps& type_ops<float>();
template const TypeOps& type_ops<double>();
template const TypeOps& type_ops<int32_t>();
template const TypeOps& type_ops<int64_t>();
template const TypeOps& type_ops<uint64_t>();
template const TypeOps& type_ops<uint8_t>();
template const TypeOps& type_ops<char>();

}  // namespace detail
}  // namespace shardlab
