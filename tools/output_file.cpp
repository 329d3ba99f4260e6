#include "tools/output_file.hpp"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <unistd.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

std::string temporary_for(const std::string& path) {
  return fmt::format("{}.tmp.{}", path, ::getpid());
}

void write_temporary(const std::string& tmp, const std::string& path, std::string_view content,
                     std::string_view flag) {
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (out) out.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!out || !out.flush()) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw InputError(fmt::format("{} {}: cannot write the file", flag, path));
  }
}

void rename_into_place(const std::string& tmp, const std::string& path, std::string_view flag) {
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw InputError(fmt::format("{} {}: cannot write the file", flag, path));
  }
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view content,
                           std::string_view flag) {
  const std::string tmp = temporary_for(path);
  write_temporary(tmp, path, content, flag);
  rename_into_place(tmp, path, flag);
}

OutputFiles::~OutputFiles() {
  for (const auto& s : staged_) {
    std::error_code ec;
    std::filesystem::remove(s.temporary, ec);
  }
}

void OutputFiles::stage(const std::string& path, std::string_view content, std::string_view flag) {
  Staged s{path, temporary_for(path), std::string(flag)};
  write_temporary(s.temporary, path, content, flag);
  staged_.push_back(std::move(s));
}

void OutputFiles::commit() {
  for (const auto& s : staged_) rename_into_place(s.temporary, s.path, s.flag);
  staged_.clear();
}

}  // namespace meshsim
