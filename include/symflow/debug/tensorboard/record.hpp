#pragma once
// TFRecord framing, the container of TensorBoard event files:
//   uint64 length (little-endian), uint32 masked CRC-32C of those 8 bytes, the data,
//   uint32 masked CRC-32C of the data.
// The CRC is "masked" because a CRC computed over data that itself embeds CRCs is weak; TensorFlow
// rotates and offsets it, and readers (TensorBoard's included) check the masked value.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace symflow::tensorboard {

namespace detail {
// CRC-32C (Castagnoli), reflected polynomial 0x82F63B78 — not zlib's CRC-32, which uses 0xEDB88320.
inline constexpr std::array<std::uint32_t, 256> crc32c_table = [] {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t byte = 0; byte < 256; ++byte) {
    std::uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    table[byte] = crc;
  }
  return table;
}();
}  // namespace detail

inline std::uint32_t crc32c(std::string_view data) noexcept {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : data) crc = detail::crc32c_table[(crc ^ c) & 0xff] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

inline std::uint32_t masked_crc32c(std::string_view data) noexcept {
  const std::uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

// One framed record, ready to append to an event file.
inline std::string tfrecord(std::string_view data) {
  auto little_endian = [](std::uint64_t value, int byte_count) {
    std::string out;
    for (int i = 0; i < byte_count; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
    return out;
  };
  const std::string length = little_endian(data.size(), 8);
  std::string out;
  out.reserve(data.size() + 16);
  out += length;
  out += little_endian(masked_crc32c(length), 4);
  out += data;
  out += little_endian(masked_crc32c(data), 4);
  return out;
}

}  // namespace symflow::tensorboard
