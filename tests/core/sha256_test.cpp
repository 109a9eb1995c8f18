#include <gtest/gtest.h>

#include "kforge/core/sha256.hpp"

namespace kforge {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, ThePortableImplementationAgreesWithTheBest) {
  std::string data;
  for (int i = 0; i < 5000; ++i) data += static_cast<char>((i * 131) & 0xff);
  for (std::size_t len : {0u, 1u, 55u, 56u, 63u, 64u, 65u, 119u, 120u, 1000u, 5000u}) {
    std::string_view part = std::string_view(data).substr(0, len);
    Sha256 best, portable(Sha256Impl::portable);
    best.update(part);
    portable.update(part);
    EXPECT_EQ(best.hex_digest(), portable.hex_digest()) << "length " << len;
  }
  Sha256 portable(Sha256Impl::portable);
  portable.update("abc");
  EXPECT_EQ(portable.hex_digest(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // This build's hashes are libcrypto's wherever libssl-dev was installed (scripts/bootstrap
  // installs it); a build without it says so here.
  if (!Sha256::accelerated()) GTEST_SKIP() << "built without OpenSSL: the portable SHA-256 only";
}

TEST(Sha256, StreamingEqualsOneShot) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data += std::to_string(i * 7919);
  for (std::size_t chunk : {1u, 3u, 63u, 64u, 65u, 1000u}) {
    for (Sha256Impl impl : {Sha256Impl::best, Sha256Impl::portable}) {
      Sha256 h(impl);
      for (std::size_t i = 0; i < data.size(); i += chunk)
        h.update(std::string_view(data).substr(i, chunk));
      EXPECT_EQ(h.hex_digest(), sha256_hex(data)) << "chunk " << chunk;
    }
  }
}

}  // namespace
}  // namespace kforge
