#pragma once
// Output files appear whole or not at all: content goes to a temporary file in the same folder
// that is renamed over the destination only after it was fully written. A command with several
// outputs stages them all and commits them together, so a failure leaves none of them behind.
#include <string>
#include <string_view>
#include <vector>

namespace meshsim {

// Throws InputError naming `flag` and the path when the file cannot be written.
void write_file_atomically(const std::string& path, std::string_view content,
                           std::string_view flag);

class OutputFiles {
 public:
  OutputFiles() = default;
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;
  ~OutputFiles();  // removes whatever was staged but not committed

  // Writes `content` to a temporary file beside `path`; InputError naming `flag` on failure.
  void stage(const std::string& path, std::string_view content, std::string_view flag);
  // Renames every staged file into place.
  void commit();

 private:
  struct Staged {
    std::string path;
    std::string temporary;
    std::string flag;
  };
  std::vector<Staged> staged_;
};

}  // namespace meshsim
