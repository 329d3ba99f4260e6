#include "validate/run/moe_comm.hpp"

#include <cstring>

#include "sim/error.hpp"

namespace meshsim {

namespace {

std::size_t bytes_of(std::span<const std::int64_t> counts, DType dtype) {
  MESHSIM_CHECK(counts.size() == 1, "a one-rank group has one member");
  return static_cast<std::size_t>(counts[0] * dtype_bytes(dtype));
}

class SoloMoeComm final : public MoeComm {
 public:
  int group_size(MoeGroup) const override { return 1; }
  std::vector<std::int64_t> exchange_counts(MoeGroup, std::span<const std::int64_t> send,
                                            std::int64_t) override {
    return {send.begin(), send.end()};
  }
  std::vector<std::int64_t> gather_counts(MoeGroup, std::span<const std::int64_t> mine) override {
    return {mine.begin(), mine.end()};
  }
  void all_to_all_v(MoeGroup, const void* send, std::span<const std::int64_t> send_counts,
                    void* recv, std::span<const std::int64_t> recv_counts, DType dtype) override {
    MESHSIM_CHECK(send_counts.size() == 1 && recv_counts[0] == send_counts[0],
                  "a one-rank all-to-all keeps its part");
    copy(send, recv, bytes_of(send_counts, dtype));
  }
  void all_gather_v(MoeGroup, const void* send, void* recv, std::span<const std::int64_t> counts,
                    DType dtype) override {
    copy(send, recv, bytes_of(counts, dtype));
  }
  void reduce_scatter_v(MoeGroup, const void* send, void* recv,
                        std::span<const std::int64_t> counts, DType dtype) override {
    copy(send, recv, bytes_of(counts, dtype));
  }

 private:
  static void copy(const void* from, void* to, std::size_t n) {
    if (n > 0) std::memcpy(to, from, n);
  }
};

}  // namespace

std::unique_ptr<MoeComm> make_solo_moe_comm() {
  return std::make_unique<SoloMoeComm>();
}

}  // namespace meshsim
