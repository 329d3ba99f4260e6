#include <doctest/doctest.h>

#include <vector>

#include "validate/run/moe_comm.hpp"

using namespace meshsim;

TEST_CASE("the one-rank MoE communication keeps every part in place") {
  const auto comm = make_solo_moe_comm();
  CHECK(comm->group_size(MoeGroup::ep) == 1);
  CHECK(comm->group_size(MoeGroup::etp) == 1);
  const std::vector<std::int64_t> counts{3, 4};
  CHECK(comm->exchange_counts(MoeGroup::ep, counts, 2) == counts);
  CHECK(comm->gather_counts(MoeGroup::etp, counts) == counts);
  const std::vector<double> send{1.5, 2.5, 3.5};
  std::vector<double> recv(3, 0.0);
  const std::vector<std::int64_t> three{3};
  comm->all_to_all_v(MoeGroup::ep, send.data(), three, recv.data(), three, DType::fp64);
  CHECK(recv == send);
  std::vector<float> in{1.f, 2.f}, out(2, 0.f);
  const std::vector<std::int64_t> two{2};
  comm->reduce_scatter_v(MoeGroup::etp, in.data(), out.data(), two, DType::fp32);
  CHECK(out == in);
  std::fill(out.begin(), out.end(), 0.f);
  comm->all_gather_v(MoeGroup::etp, in.data(), out.data(), two, DType::fp32);
  CHECK(out == in);
}
