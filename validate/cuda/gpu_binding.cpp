#include "validate/cuda/gpu_binding.hpp"

#include <array>
#include <charconv>
#include <string_view>

#include "sim/error.hpp"

namespace meshsim {

std::optional<int> local_rank_from_env(const std::function<const char*(const char*)>& getenv) {
  constexpr std::array<const char*, 4> kNames = {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                                                 "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK"};
  for (const char* name : kNames) {
    const char* value = getenv(name);
    if (value == nullptr) continue;
    const std::string_view text(value);
    int parsed = -1;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (ec == std::errc() && end == text.data() + text.size() && parsed >= 0) return parsed;
  }
  return std::nullopt;
}

int device_for_local_rank(int local_rank, int devices) {
  MESHSIM_CHECK(devices >= 1 && local_rank >= 0, "device_for_local_rank: no devices");
  return local_rank % devices;
}

}  // namespace meshsim
