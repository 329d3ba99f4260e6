#pragma once
// Output files appear whole or not at all. A regular file (or a new path) gets its content in a
// temporary file in the same folder that is renamed over it only after it was fully written; a
// symlink is followed and its target written that way. A path that exists and is not a regular
// file (a device, a FIFO, /dev/stdout) and `-` (standard output) are written in place, since
// renaming over them would replace the node itself. A command with several outputs stages them
// all and commits them together, so a failure leaves none of them behind; temporaries are removed
// on every exit path, SIGINT and SIGTERM included (tools/temp_files.hpp).
#include <string>
#include <string_view>
#include <vector>

namespace meshsim {

// Checks, before any work, that `path` can be written as an output: `-`, a writable non-regular
// file, or a path whose folder exists and is writable (a symlink's target's folder). Throws
// InputError naming `flag`, the path and the reason.
void check_output_path(const std::string& path, std::string_view flag);
// Checks that `dir` can be created or written as an output folder (--dump DIR): an existing
// folder that is writable, or a new one whose nearest existing parent is a writable folder.
void check_output_dir(const std::string& dir, std::string_view flag);

// Throws InputError naming `flag`, the path and the reason when the file cannot be written.
void write_file_atomically(const std::string& path, std::string_view content,
                           std::string_view flag);

class OutputFiles {
 public:
  OutputFiles() = default;
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;
  ~OutputFiles();  // removes whatever was staged but not committed

  // Writes `content` to a temporary file beside `path` (or keeps it, for a path written in
  // place); InputError naming `flag` on failure.
  void stage(const std::string& path, std::string_view content, std::string_view flag);
  // Writes the in-place outputs, then renames every temporary into place.
  void commit();

 private:
  struct Staged {
    std::string path;       // as the user gave it
    std::string target;     // where it is written (symlinks followed)
    std::string temporary;  // empty: written in place at commit
    std::string content;    // in-place outputs only
    std::string flag;
    int kind;  // how the target is written (output_file.cpp)
  };
  std::vector<Staged> staged_;
};

}  // namespace meshsim
