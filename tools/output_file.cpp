#include "tools/output_file.hpp"

#include <cerrno>
#include <filesystem>
#include <iostream>
#include <system_error>

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/error.hpp"
#include "tools/temp_files.hpp"

namespace meshsim {
namespace {

namespace fs = std::filesystem;

enum class Kind { standard_output, standard_error, in_place, atomic };

struct Target {
  std::string path;  // where the bytes go (symlinks followed)
  Kind kind;
};

[[noreturn]] void fail(std::string_view flag, const std::string& path, std::string_view what) {
  throw InputError(fmt::format("{} {}: {}", flag, path, what));
}

std::string reason(int err) {
  return std::generic_category().message(err);
}

constexpr int kMaxSymlinkHops = 40;  // Linux's own limit (MAXSYMLINKS in fs/namei.c)

// Where `path` is written and how: the standard streams by name, symlinks followed (a link under
// /proc, such as /proc/self/fd/1, is opened as it stands: its target is an open file).
Target resolve(const std::string& path, std::string_view flag) {
  if (path == "-" || path == "/dev/stdout" || path == "/dev/fd/1" || path == "/proc/self/fd/1") {
    return {path, Kind::standard_output};
  }
  if (path == "/dev/stderr" || path == "/dev/fd/2" || path == "/proc/self/fd/2") {
    return {path, Kind::standard_error};
  }
  fs::path p(path);
  for (int hops = 0; hops <= kMaxSymlinkHops; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) {
      // Missing, or under a file: written atomically, and check_folder names the folder at fault.
      if (errno == ENOENT || errno == ENOTDIR) return {p.string(), Kind::atomic};
      fail(flag, path, reason(errno));
    }
    if (S_ISDIR(st.st_mode)) fail(flag, path, "is a folder, expected a file name");
    if (!S_ISLNK(st.st_mode)) {
      return {p.string(), S_ISREG(st.st_mode) ? Kind::atomic : Kind::in_place};
    }
    if (p.string().starts_with("/proc/")) return {p.string(), Kind::in_place};
    std::error_code ec;
    const fs::path link = fs::read_symlink(p, ec);
    if (ec) fail(flag, path, ec.message());
    p = link.is_absolute() ? link : p.parent_path() / link;
  }
  fail(flag, path, "too many levels of symbolic links");
}

std::string folder_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

// `dir` exists, is a folder and can be written in; otherwise InputError naming the flag and path.
void check_folder(const std::string& dir, std::string_view flag, const std::string& path) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) fail(flag, path, fmt::format("the folder {} does not exist", dir));
    fail(flag, path, fmt::format("{}: {}", dir, reason(errno)));
  }
  if (!S_ISDIR(st.st_mode)) fail(flag, path, fmt::format("{} is not a folder", dir));
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    fail(flag, path, fmt::format("cannot write in the folder {}: {}", dir, reason(errno)));
  }
}

// Writes all of `content` to `fd`; the errno of the failure, or 0.
int write_all(int fd, std::string_view content) {
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

void write_in_place(const Target& t, std::string_view content, std::string_view flag,
                    const std::string& path) {
  int err = 0;
  if (t.kind == Kind::standard_output || t.kind == Kind::standard_error) {
    std::cout.flush();  // keep what the command printed before in order
    std::cerr.flush();
    err = write_all(t.kind == Kind::standard_output ? STDOUT_FILENO : STDERR_FILENO, content);
  } else {
    const int fd = ::open(t.path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) fail(flag, path, fmt::format("cannot write the file: {}", reason(errno)));
    err = write_all(fd, content);
    if (::close(fd) != 0 && err == 0) err = errno;
  }
  if (err != 0) fail(flag, path, fmt::format("cannot write the file: {}", reason(err)));
}

void remove_temporary(const std::string& tmp) {
  ::unlink(tmp.c_str());
  unregister_temporary(tmp);
}

void write_temporary(const std::string& tmp, std::string_view content, std::string_view flag,
                     const std::string& path) {
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) fail(flag, path, fmt::format("cannot write the file: {}", reason(errno)));
  register_temporary(tmp);
  int err = write_all(fd, content);
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    remove_temporary(tmp);
    fail(flag, path, fmt::format("cannot write the file: {}", reason(err)));
  }
}

}  // namespace

void check_output_path(const std::string& path, std::string_view flag) {
  const Target t = resolve(path, flag);
  if (t.kind == Kind::atomic) return check_folder(folder_of(t.path), flag, path);
  if (t.kind == Kind::in_place && ::access(t.path.c_str(), W_OK) != 0) {
    fail(flag, path, fmt::format("cannot write the file: {}", reason(errno)));
  }
}

void check_output_dir(const std::string& dir, std::string_view flag) {
  fs::path p(dir);
  std::error_code ec;
  while (!p.empty() && !fs::exists(fs::symlink_status(p, ec))) p = p.parent_path();
  check_folder(p.empty() ? std::string(".") : p.string(), flag, dir);
}

void write_file_atomically(const std::string& path, std::string_view content,
                           std::string_view flag) {
  OutputFiles files;
  files.stage(path, content, flag);
  files.commit();
}

OutputFiles::~OutputFiles() {
  for (const auto& s : staged_) {
    if (!s.temporary.empty()) remove_temporary(s.temporary);
  }
}

void OutputFiles::stage(const std::string& path, std::string_view content, std::string_view flag) {
  const Target t = resolve(path, flag);
  for (const auto& other : staged_) {
    // Two outputs into one file: the second would overwrite the first (and share its temporary).
    if (other.target == t.path && t.kind == Kind::atomic) {
      fail(flag, path,
           fmt::format("is also the file of {}: give each output its own file", other.flag));
    }
  }
  Staged s{path, t.path, "", "", std::string(flag), static_cast<int>(t.kind)};
  if (t.kind == Kind::atomic) {
    s.temporary = fmt::format("{}.tmp.{}", t.path, ::getpid());
    write_temporary(s.temporary, content, flag, path);
  } else {
    s.content = std::string(content);
  }
  staged_.push_back(std::move(s));
}

void OutputFiles::commit() {
  for (const auto& s : staged_) {
    if (s.temporary.empty()) {
      write_in_place({s.target, static_cast<Kind>(s.kind)}, s.content, s.flag, s.path);
    }
  }
  for (const auto& s : staged_) {
    if (s.temporary.empty()) continue;
    if (::rename(s.temporary.c_str(), s.target.c_str()) != 0) {
      const int err = errno;
      fail(s.flag, s.path, fmt::format("cannot write the file: {}", reason(err)));
    }
    unregister_temporary(s.temporary);
  }
  staged_.clear();
}

}  // namespace meshsim
