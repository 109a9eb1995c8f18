#pragma once
// The guard both HTTP listeners use (`kforge serve`'s viewer, kforged's scoring endpoint): a
// listener on a loopback address answers only requests whose Host is a loopback literal or
// localhost (DNS rebinding), and one elsewhere only requests carrying its token.

#include <string>
#include <string_view>

namespace kforge::app {

// Equal texts, in time that depends on the length of `presented` only.
bool constant_time_equal(std::string_view presented, std::string_view secret);

// A loopback host: "localhost", an IPv4 literal of 127.0.0.0/8 (four decimal parts, as inet_pton
// reads them) or the IPv6 loopback literal. Names that merely start with "127." are not.
bool is_loopback(const std::string& host);

// The host part of a Host header ("127.0.0.1:8370", "[::1]:8370", "localhost"); "" when the
// header is not HOST, HOST:PORT, [V6] or [V6]:PORT with a decimal port.
std::string host_of(const std::string& header);

}  // namespace kforge::app
