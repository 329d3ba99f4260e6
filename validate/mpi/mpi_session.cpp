#include "validate/mpi/mpi_session.hpp"

#include <climits>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "validate/mpi/mpi_check.hpp"

namespace meshsim {

[[noreturn]] void mpi_call_failed(int code, const char* call, const char* file, int line) {
  char message[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, message, &length) != MPI_SUCCESS) length = 0;
  throw MpiError(fmt::format("{} failed at {}:{}: {}", call, file, line,
                             std::string(message, static_cast<std::size_t>(length))));
}

MpiSession::MpiSession() {
  int initialized = 0;
  MPI_CHECK(MPI_Initialized(&initialized));
  if (initialized == 0) {
    MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided_));
    initialized_here_ = true;
  } else {
    MPI_CHECK(MPI_Query_thread(&provided_));
  }
  thread_multiple_ = provided_ >= MPI_THREAD_MULTIPLE;
  MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  MPI_Comm node = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  int local = 1;
  MPI_CHECK(MPI_Comm_size(node, &local));
  MPI_CHECK(MPI_Comm_free(&node));
  MPI_CHECK(MPI_Allreduce(&local, &ranks_per_node_, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
}

MpiSession::~MpiSession() {
  if (initialized_here_) MPI_Finalize();
}

std::string MpiSession::thread_level() const {
  switch (provided_) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    default:
      return "MPI_THREAD_MULTIPLE";
  }
}

std::string MpiSession::library_version() const {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_CHECK(MPI_Get_library_version(version, &length));
  std::string v(version, static_cast<std::size_t>(length));
  if (const auto eol = v.find_first_of(",\n"); eol != std::string::npos) v.resize(eol);
  return v;
}

void MpiSession::barrier() const {
  MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

void MpiSession::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

namespace {

// Rank 0 receives every rank's `mine` (elements of `type`, `width` bytes each).
std::vector<std::vector<std::byte>> gather_raw(const void* mine, std::size_t count,
                                               std::size_t width, int rank, int size) {
  if (count > static_cast<std::size_t>(INT_MAX) / width) {
    throw MpiError(fmt::format("gather of {} bytes exceeds MPI's int count", count * width));
  }
  const int my_bytes = static_cast<int>(count * width);
  std::vector<int> counts(rank == 0 ? static_cast<std::size_t>(size) : 0);
  MPI_CHECK(MPI_Gather(&my_bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD));
  std::vector<int> displs(counts.size(), 0);
  long long total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    displs[r] = static_cast<int>(total);
    total += counts[r];
    if (total > INT_MAX) throw MpiError("gathered records exceed MPI's int displacement");
  }
  std::vector<std::byte> all(static_cast<std::size_t>(total));
  MPI_CHECK(MPI_Gatherv(mine, my_bytes, MPI_BYTE, all.data(), counts.data(), displs.data(),
                        MPI_BYTE, 0, MPI_COMM_WORLD));
  std::vector<std::vector<std::byte>> out(counts.size());
  for (std::size_t r = 0; r < counts.size(); ++r) {
    const auto* begin = all.data() + displs[r];
    out[r].assign(begin, begin + counts[r]);
  }
  return out;
}

}  // namespace

std::vector<std::vector<std::int64_t>> MpiSession::gather(
    const std::vector<std::int64_t>& mine) const {
  const auto raw = gather_raw(mine.data(), mine.size(), sizeof(std::int64_t), rank_, size_);
  std::vector<std::vector<std::int64_t>> out(raw.size());
  for (std::size_t r = 0; r < raw.size(); ++r) {
    out[r].resize(raw[r].size() / sizeof(std::int64_t));
    if (!raw[r].empty()) std::memcpy(out[r].data(), raw[r].data(), raw[r].size());
  }
  return out;
}

std::vector<std::vector<std::byte>> MpiSession::gather_bytes(
    const std::vector<std::byte>& mine) const {
  return gather_raw(mine.data(), mine.size(), 1, rank_, size_);
}

bool MpiSession::all_true(bool mine) const {
  int in = mine ? 1 : 0;
  int out = 0;
  MPI_CHECK(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD));
  return out != 0;
}

}  // namespace meshsim
