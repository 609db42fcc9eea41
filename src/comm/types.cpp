// The element types the Communicator carries: their MPI datatype and their sum kernel (see mpi_handle.h).
// bf16 sums widen both operands to float, add, and round back to nearest even — after every single
// addition, exactly as a ring of bf16 buffers on real accelerators does. Integer sums wrap (as MPI's).
// ExactSum's "sum" is its order-free merge (core/exact_sum.h): any order of a ring gives the same bits, MPI's too.
// Besides the sums, a maximum for float and double (the vocabulary-parallel cross-entropy's row maxima):
// exact, so its result never depends on the order. Leaves out: min, product.
#include <cstdint>
#include <type_traits>

#include "comm/mpi_handle.h"
#include "core/bf16.h"

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

void merge_exact(void* acc, const void* in, size_t n) {
  exact_merge(static_cast<ExactSum*>(acc), static_cast<const ExactSum*>(in), n);
}
void exact_user_op(void* in, void* inout, int* len, MPI_Datatype*) {
  merge_exact(inout, in, static_cast<size_t>(*len));
}
MPI_Op exact_merge_op() {
  static MPI_Op op = MPI_OP_NULL;
  if (op == MPI_OP_NULL) MPI_Op_create(&exact_user_op, /*commute=*/1, &op);
  return op;
}

MPI_Op bf16_sum() {
  static MPI_Op op = MPI_OP_NULL;
  if (op == MPI_OP_NULL) MPI_Op_create(&bf16_user_op, /*commute=*/1, &op);
  return op;
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
MPI_Datatype mpi_type<ExactSum>() {  // 32 opaque bytes
  static MPI_Datatype t = MPI_DATATYPE_NULL;
  if (t == MPI_DATATYPE_NULL) {
    MPI_Type_contiguous(static_cast<int>(sizeof(ExactSum)), MPI_BYTE, &t);
    MPI_Type_commit(&t);
  }
  return t;
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

template <>
const TypeOps& type_ops<ExactSum>() {
  static const TypeOps ops{sizeof(ExactSum), mpi_type<ExactSum>(), &merge_exact, &exact_merge_op};
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
