#pragma once
// MPI element types and sum operations for the Program's data types (private to validate/'s MPI
// backend; includes mpi.h). bf16 and fp16 travel as 16-bit words and are summed by user-defined
// operations that add in float32 and round back at every step (reduce_sum.hpp), as NCCL does, so
// the bytes on the wire are the Program's bytes. fp32 and fp64 use MPI_SUM.
#include <mpi.h>

#include "sim/dtype.hpp"

namespace meshsim {

MPI_Datatype mpi_element_type(DType dtype);

class MpiSumOps {
 public:
  MpiSumOps();   // after MPI_Init
  ~MpiSumOps();  // before MPI_Finalize
  MpiSumOps(const MpiSumOps&) = delete;
  MpiSumOps& operator=(const MpiSumOps&) = delete;

  MPI_Op sum(DType dtype) const;

 private:
  MPI_Op bf16_ = MPI_OP_NULL;
  MPI_Op fp16_ = MPI_OP_NULL;
};

}  // namespace meshsim
