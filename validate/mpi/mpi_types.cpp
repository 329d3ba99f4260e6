#include "validate/mpi/mpi_types.hpp"

#include "validate/mpi/mpi_check.hpp"
#include "validate/tensors/reduce_sum.hpp"

namespace meshsim {
namespace {

void sum_bf16(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  sum_into(DType::bf16, static_cast<std::byte*>(inout), static_cast<const std::byte*>(in), *len);
}

void sum_fp16(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  sum_into(DType::fp16, static_cast<std::byte*>(inout), static_cast<const std::byte*>(in), *len);
}

}  // namespace

MPI_Datatype mpi_element_type(DType dtype) {
  switch (dtype) {
    case DType::bf16:
    case DType::fp16:
      return MPI_UINT16_T;
    case DType::fp32:
      return MPI_FLOAT;
    case DType::fp64:
      return MPI_DOUBLE;
  }
  return MPI_BYTE;
}

MpiSumOps::MpiSumOps() {
  MPI_CHECK(MPI_Op_create(&sum_bf16, 1, &bf16_));
  MPI_CHECK(MPI_Op_create(&sum_fp16, 1, &fp16_));
}

MpiSumOps::~MpiSumOps() {
  if (bf16_ != MPI_OP_NULL) MPI_Op_free(&bf16_);
  if (fp16_ != MPI_OP_NULL) MPI_Op_free(&fp16_);
}

MPI_Op MpiSumOps::sum(DType dtype) const {
  switch (dtype) {
    case DType::bf16:
      return bf16_;
    case DType::fp16:
      return fp16_;
    case DType::fp32:
    case DType::fp64:
      return MPI_SUM;
  }
  return MPI_SUM;
}

}  // namespace meshsim
