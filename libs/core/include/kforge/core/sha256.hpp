#pragma once
// SHA-256 (FIPS 180-4), streaming. Used for content hashes, request identities and prompt
// identities. Not a secret-handling primitive: no constant-time guarantees are needed here.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kforge {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view data);
  std::array<std::uint8_t, 32> digest();  // finalises; the object must not be updated after
  std::string hex_digest();               // lower-case hex of digest()

 private:
  void block(const std::uint8_t* p);
  std::uint32_t h_[8];
  std::uint8_t buf_[64];
  std::size_t buf_len_ = 0;
  std::uint64_t total_ = 0;
};

// Lower-case hex SHA-256 of data.
std::string sha256_hex(std::string_view data);

}  // namespace kforge
