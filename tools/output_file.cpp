#include "tools/output_file.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <unistd.h>

#include "sim/error.hpp"

namespace meshsim {

void write_file_atomically(const std::string& path, std::string_view content,
                           std::string_view flag) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (out) out.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!out || !out.flush()) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw InputError(fmt::format("{} {}: cannot write the file", flag, path));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw InputError(fmt::format("{} {}: cannot write the file", flag, path));
  }
}

}  // namespace meshsim
