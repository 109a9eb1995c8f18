#pragma once
// SHA-256 (FIPS 180-4), streaming. Used for content hashes, request identities and prompt
// identities. Not a secret-handling primitive: no constant-time guarantees are needed here.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kforge {

// Which implementation a Sha256 uses: the best this build has (OpenSSL's libcrypto, with the
// CPU's SHA extensions where it has them, when kforge was built with it; else the portable one),
// or the portable one (for tests that compare the two).
enum class Sha256Impl { best, portable };

class Sha256 {
 public:
  explicit Sha256(Sha256Impl impl = Sha256Impl::best);
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::string_view data);
  std::array<std::uint8_t, 32> digest();  // finalises; the object must not be updated after
  std::string hex_digest();               // lower-case hex of digest()

  // True when Sha256Impl::best is libcrypto's (the build found OpenSSL).
  static bool accelerated();

 private:
  void block(const std::uint8_t* p);
  void* evp_ = nullptr;  // libcrypto's EVP_MD_CTX, or null for the portable implementation
  std::uint32_t h_[8];
  std::uint8_t buf_[64];
  std::size_t buf_len_ = 0;
  std::uint64_t total_ = 0;
};

// Lower-case hex SHA-256 of data.
std::string sha256_hex(std::string_view data);

}  // namespace kforge
