#pragma once
// A protobuf wire-format writer: just enough to emit the few fixed messages TensorBoard reads
// (Event, Summary, HistogramProto, TensorProto, GraphDef, ...), so symflow needs no protobuf library.
// Fields are written exactly as called and never skipped for holding a default value: several of
// the fields we write sit in a proto3 `oneof` (Summary.Value.simple_value, Event.file_version),
// where only presence on the wire tells the reader which alternative is meant, even for 0.
#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace symflow::tensorboard {

enum class wire_type : std::uint32_t { varint = 0, fixed64 = 1, length_delimited = 2, fixed32 = 5 };

class proto_writer {
 public:
  void varint_field(std::uint32_t field, std::uint64_t value) {
    tag(field, wire_type::varint);
    varint(value);
  }
  // int64 fields are plain (not zigzag) varints, so a negative number takes ten bytes.
  void int64_field(std::uint32_t field, std::int64_t value) { varint_field(field, static_cast<std::uint64_t>(value)); }
  void bool_field(std::uint32_t field, bool value) { varint_field(field, value ? 1 : 0); }
  void enum_field(std::uint32_t field, std::int32_t value) { int64_field(field, value); }

  void double_field(std::uint32_t field, double value) {
    tag(field, wire_type::fixed64);
    little_endian(std::bit_cast<std::uint64_t>(value), 8);
  }
  void float_field(std::uint32_t field, float value) {
    tag(field, wire_type::fixed32);
    little_endian(std::bit_cast<std::uint32_t>(value), 4);
  }

  // string and bytes share one encoding; so does an embedded message (its serialised bytes).
  void bytes_field(std::uint32_t field, std::string_view bytes) {
    tag(field, wire_type::length_delimited);
    varint(bytes.size());
    out_.append(bytes);
  }
  void message_field(std::uint32_t field, const proto_writer& message) { bytes_field(field, message.bytes()); }

  // Packed repeated doubles: one length-delimited field instead of a tag per element, as proto3
  // writes `repeated double` by default (HistogramProto's buckets declare it explicitly).
  void packed_doubles_field(std::uint32_t field, std::span<const double> values) {
    tag(field, wire_type::length_delimited);
    varint(values.size() * 8);
    for (double v : values) little_endian(std::bit_cast<std::uint64_t>(v), 8);
  }
  void packed_int64s_field(std::uint32_t field, std::span<const std::int64_t> values) {
    proto_writer payload;
    for (std::int64_t v : values) payload.varint(static_cast<std::uint64_t>(v));
    bytes_field(field, payload.bytes());
  }

  const std::string& bytes() const noexcept { return out_; }
  std::string take() noexcept { return std::move(out_); }

 private:
  void tag(std::uint32_t field, wire_type type) { varint((std::uint64_t{field} << 3) | static_cast<std::uint32_t>(type)); }
  void varint(std::uint64_t value) {
    while (value >= 0x80) {
      out_.push_back(static_cast<char>((value & 0x7f) | 0x80));
      value >>= 7;
    }
    out_.push_back(static_cast<char>(value));
  }
  void little_endian(std::uint64_t value, int byte_count) {
    for (int i = 0; i < byte_count; ++i) out_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }

  std::string out_;
};

}  // namespace symflow::tensorboard
