#include "validate/mpi/mpi_moe_comm.hpp"

#include <climits>
#include <numeric>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "validate/mpi/mpi_check.hpp"
#include "validate/mpi/mpi_types.hpp"

namespace meshsim {

namespace {

std::vector<int> as_int(std::span<const std::int64_t> counts) {
  std::vector<int> out;
  for (const std::int64_t n : counts) {
    MESHSIM_CHECK(n >= 0 && n <= INT_MAX, fmt::format("MPI count {} outside [0, INT_MAX]", n));
    out.push_back(static_cast<int>(n));
  }
  return out;
}

std::vector<int> offsets(const std::vector<int>& counts) {
  std::vector<int> out(counts.size(), 0);
  std::int64_t at = 0;
  for (std::size_t p = 0; p < counts.size(); ++p) {
    MESHSIM_CHECK(at <= INT_MAX, "MPI displacement above INT_MAX");
    out[p] = static_cast<int>(at);
    at += counts[p];
  }
  return out;
}

class MpiMoeComm final : public MoeComm {
 public:
  explicit MpiMoeComm(int etp) {
    int rank = 0;
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    const int i = rank % etp, q = rank / etp;
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, i, q, &ep_));
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, q, i, &etp_));
  }
  ~MpiMoeComm() override {
    MPI_Comm_free(&ep_);
    MPI_Comm_free(&etp_);
  }

  int group_size(MoeGroup g) const override {
    int n = 0;
    MPI_CHECK(MPI_Comm_size(comm(g), &n));
    return n;
  }

  std::vector<std::int64_t> exchange_counts(MoeGroup g, std::span<const std::int64_t> send,
                                            std::int64_t n) override {
    std::vector<std::int64_t> recv(send.size());
    MPI_CHECK(MPI_Alltoall(send.data(), static_cast<int>(n), MPI_INT64_T, recv.data(),
                           static_cast<int>(n), MPI_INT64_T, comm(g)));
    return recv;
  }

  std::vector<std::int64_t> gather_counts(MoeGroup g, std::span<const std::int64_t> mine) override {
    std::vector<std::int64_t> all(mine.size() * static_cast<std::size_t>(group_size(g)));
    const int n = static_cast<int>(mine.size());
    MPI_CHECK(MPI_Allgather(mine.data(), n, MPI_INT64_T, all.data(), n, MPI_INT64_T, comm(g)));
    return all;
  }

  void all_to_all_v(MoeGroup g, const void* send, std::span<const std::int64_t> send_counts,
                    void* recv, std::span<const std::int64_t> recv_counts, DType dtype) override {
    const std::vector<int> sc = as_int(send_counts), rc = as_int(recv_counts);
    const std::vector<int> sd = offsets(sc), rd = offsets(rc);
    const MPI_Datatype t = mpi_element_type(dtype);
    MPI_CHECK(MPI_Alltoallv(send, sc.data(), sd.data(), t, recv, rc.data(), rd.data(), t, comm(g)));
  }

  void all_gather_v(MoeGroup g, const void* send, void* recv, std::span<const std::int64_t> counts,
                    DType dtype) override {
    const std::vector<int> c = as_int(counts), d = offsets(c);
    const MPI_Datatype t = mpi_element_type(dtype);
    MPI_CHECK(MPI_Allgatherv(send, c[static_cast<std::size_t>(position(g))], t, recv, c.data(),
                             d.data(), t, comm(g)));
  }

  void reduce_scatter_v(MoeGroup g, const void* send, void* recv,
                        std::span<const std::int64_t> counts, DType dtype) override {
    MESHSIM_CHECK(dtype == DType::fp32 || dtype == DType::fp64, "MoE sums are fp32 or fp64");
    const std::vector<int> c = as_int(counts);
    MPI_CHECK(MPI_Reduce_scatter(send, recv, c.data(), mpi_element_type(dtype), MPI_SUM, comm(g)));
  }

 private:
  MPI_Comm comm(MoeGroup g) const { return g == MoeGroup::ep ? ep_ : etp_; }
  int position(MoeGroup g) const {
    int p = 0;
    MPI_CHECK(MPI_Comm_rank(comm(g), &p));
    return p;
  }

  MPI_Comm ep_ = MPI_COMM_NULL;
  MPI_Comm etp_ = MPI_COMM_NULL;
};

}  // namespace

std::unique_ptr<MoeComm> make_mpi_moe_comm(int etp) {
  return std::make_unique<MpiMoeComm>(etp);
}

}  // namespace meshsim
