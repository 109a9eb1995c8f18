#include "kforge/app/http_guard.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>

namespace kforge::app {

bool constant_time_equal(std::string_view presented, std::string_view secret) {
  unsigned char diff = presented.size() == secret.size() ? 0 : 1;
  for (std::size_t i = 0; i < presented.size(); ++i)
    diff |=
        static_cast<unsigned char>(presented[i] ^ (secret.empty() ? 0 : secret[i % secret.size()]));
  return diff == 0;
}

bool is_loopback(const std::string& host) {
  std::string lower = host;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "localhost") return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return ::inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

std::string host_of(const std::string& header) {
  auto port_ok = [](std::string_view p) {
    return !p.empty() && p.size() <= 5 &&
           std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!header.empty() && header.front() == '[') {
    auto close = header.find(']');
    if (close == std::string::npos) return "";
    std::string_view rest = std::string_view(header).substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || !port_ok(rest.substr(1)))) return "";
    return header.substr(1, close - 1);
  }
  auto colon = header.find(':');
  if (colon == std::string::npos) return header;
  if (header.find(':', colon + 1) != std::string::npos) return "";  // a bare IPv6 is no Host
  if (!port_ok(std::string_view(header).substr(colon + 1))) return "";
  return header.substr(0, colon);
}

}  // namespace kforge::app
