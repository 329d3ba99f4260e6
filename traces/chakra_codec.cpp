#include "traces/chakra_codec.hpp"

#include <limits>

#include <fmt/format.h>
#include <google/protobuf/stubs/logging.h>  // SetLogHandler (protobuf 3.21, Debian 12)

#include "sim/error.hpp"

namespace meshsim::chakra {

void append_delimited(std::string& out, const google::protobuf::MessageLite& message) {
  const std::string body = message.SerializeAsString();
  auto size = static_cast<std::uint64_t>(body.size());
  do {  // base-128 varint, low group first, high bit = more groups follow
    const auto low = static_cast<unsigned char>(size & 0x7f);
    size >>= 7;
    out.push_back(static_cast<char>(size != 0 ? (low | 0x80) : low));
  } while (size != 0);
  out += body;
}

DelimitedReader::DelimitedReader(std::string_view bytes, std::string origin)
    : bytes_(bytes), origin_(std::move(origin)) {
  // libprotobuf logs what it rejects (invalid UTF-8 in a string field) on stderr; the failed
  // parse is reported here instead, as the CLI's one line.
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)quiet;
}

void DelimitedReader::next(google::protobuf::MessageLite& message, std::string_view what) {
  const std::size_t start = at_;
  std::uint64_t size = 0;
  for (int shift = 0;; shift += 7) {
    if (at_ >= bytes_.size()) {
      throw InputError(
          fmt::format("{}: {} at byte {}: the file ends inside its length prefix "
                      "(truncated?)",
                      origin_, what, start));
    }
    if (shift > 28) {  // protolib reads a 32-bit varint: at most 5 bytes
      throw InputError(
          fmt::format("{}: {} at byte {}: length prefix longer than 5 bytes "
                      "(not a Chakra trace, or corrupt)",
                      origin_, what, start));
    }
    const auto b = static_cast<unsigned char>(bytes_[at_++]);
    size |= std::uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80u) == 0) break;
  }
  const std::size_t left = bytes_.size() - at_;
  if (size > left) {
    throw InputError(
        fmt::format("{}: {} at byte {}: a message of {} bytes, but only {} bytes are "
                    "left (truncated?)",
                    origin_, what, start, size, left));
  }
  if (!message.ParseFromArray(bytes_.data() + at_, static_cast<int>(size))) {
    throw InputError(fmt::format("{}: {} at byte {}: not a valid Chakra {} message (corrupt?)",
                                 origin_, what, start, message.GetTypeName()));
  }
  at_ += static_cast<std::size_t>(size);
}

std::optional<std::int64_t> integer_value(const pb::AttributeProto& a) {
  using A = pb::AttributeProto;
  switch (a.value_case()) {
    case A::kInt32Val:
      return a.int32_val();
    case A::kInt64Val:
      return a.int64_val();
    case A::kUint32Val:
      return a.uint32_val();
    case A::kUint64Val:
      if (a.uint64_val() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return std::nullopt;
      }
      return static_cast<std::int64_t>(a.uint64_val());
    case A::kSint32Val:
      return a.sint32_val();
    case A::kSint64Val:
      return a.sint64_val();
    case A::kFixed32Val:
      return a.fixed32_val();
    case A::kFixed64Val:
      if (a.fixed64_val() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return std::nullopt;
      }
      return static_cast<std::int64_t>(a.fixed64_val());
    case A::kSfixed32Val:
      return a.sfixed32_val();
    case A::kSfixed64Val:
      return a.sfixed64_val();
    default:
      return std::nullopt;
  }
}

const pb::AttributeProto* find_attr(const pb::Node& node, std::string_view name) {
  for (const auto& a : node.attr()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

namespace {
pb::AttributeProto& add_attr(pb::Node& node, std::string_view name) {
  pb::AttributeProto& a = *node.add_attr();
  a.set_name(std::string(name));
  return a;
}
}  // namespace

void add_int64(pb::Node& node, std::string_view name, std::int64_t value) {
  add_attr(node, name).set_int64_val(value);
}
void add_int32(pb::Node& node, std::string_view name, std::int32_t value) {
  add_attr(node, name).set_int32_val(value);
}
void add_uint64(pb::Node& node, std::string_view name, std::uint64_t value) {
  add_attr(node, name).set_uint64_val(value);
}
void add_bool(pb::Node& node, std::string_view name, bool value) {
  add_attr(node, name).set_bool_val(value);
}
void add_string(pb::Node& node, std::string_view name, std::string_view value) {
  add_attr(node, name).set_string_val(std::string(value));
}

}  // namespace meshsim::chakra
