#include "validate/tensors/npy_writer.hpp"

#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {

std::string npy_file(const std::vector<std::int64_t>& shape, const std::vector<double>& values,
                     DType dtype) {
  static_assert(std::endian::native == std::endian::little, "npy_file writes little-endian data");
  const bool wide = dtype == DType::fp64;
  std::string dims;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    dims += fmt::format("{}{}", i == 0 ? "" : ", ", shape[i]);
  }
  if (shape.size() == 1) dims += ",";  // a 1-tuple: (3,)
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}",
                                   wide ? "<f8" : "<f4", dims);
  // Magic (6) + version (2) + header length (2) + header, padded with spaces to a multiple of 64
  // and ended by a newline.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  MESHSIM_CHECK(header.size() < 65536, "npy header too long");
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  const std::size_t width = wide ? 8 : 4;
  const std::size_t begin = out.size();
  out.resize(begin + values.size() * width);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (wide) {
      std::memcpy(out.data() + begin + i * 8, &values[i], 8);
    } else {
      const auto f = static_cast<float>(values[i]);
      std::memcpy(out.data() + begin + i * 4, &f, 4);
    }
  }
  return out;
}

}  // namespace meshsim
