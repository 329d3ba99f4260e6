#pragma once
// Chakra execution traces on disk (MLCommons Chakra, schema traces/chakra/et_def.proto): a file is
// a GlobalMetadata message followed by Node messages, each preceded by its length as a base-128
// varint, as Chakra's protolib (src/third_party/utils/protolib.py, encodeMessage/decodeMessage)
// writes them. Internal to traces/: the only header that names the generated protobuf classes.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "chakra/et_def.pb.h"

namespace meshsim::chakra {

namespace pb = ::ChakraProtoMsg;

// Appends `message` with its length in front (protolib's encodeMessage).
void append_delimited(std::string& out, const google::protobuf::MessageLite& message);

// Reads the length-delimited messages of one file in turn; every error is an InputError naming
// `origin`, the message and the byte offset.
class DelimitedReader {
 public:
  DelimitedReader(std::string_view bytes, std::string origin);
  bool at_end() const { return at_ >= bytes_.size(); }
  std::size_t offset() const { return at_; }
  // Parses the next message into `message`; `what` names it in errors ("node 3", "GlobalMetadata").
  void next(google::protobuf::MessageLite& message, std::string_view what);

 private:
  std::string_view bytes_;
  std::string origin_;
  std::size_t at_ = 0;
};

// Attribute values: an integer attribute may be written in any of the schema's integer kinds
// (ASTRA-sim's feeder reads comm_size as int64_val, Chakra's generator writes uint64_val).
std::optional<std::int64_t> integer_value(const pb::AttributeProto& a);
const pb::AttributeProto* find_attr(const pb::Node& node, std::string_view name);

void add_int64(pb::Node& node, std::string_view name, std::int64_t value);
void add_int32(pb::Node& node, std::string_view name, std::int32_t value);
void add_uint64(pb::Node& node, std::string_view name, std::uint64_t value);
void add_bool(pb::Node& node, std::string_view name, bool value);
void add_string(pb::Node& node, std::string_view name, std::string_view value);

}  // namespace meshsim::chakra
