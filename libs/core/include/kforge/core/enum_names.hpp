#pragma once
// Closed enums and their stored names: one table per enum, read both ways.
//
//   enum class Mode { warm, fresh };
//   inline constexpr EnumName<Mode> kModeNames[] = {{Mode::warm, "warm"}, {Mode::fresh, "fresh"}};
//   name_of(kModeNames, Mode::warm) == "warm"; value_of(kModeNames, "fresh") == Mode::fresh
//
// A table lists every value of its enum once; name_of() of a value missing from it is "".
// ConfigNode::get_enum (config.hpp) reads a configuration key through such a table.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "kforge/core/result.hpp"

namespace kforge {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

template <class E, std::size_t N>
constexpr std::string_view name_of(const EnumName<E> (&table)[N], E value) {
  for (const auto& e : table)
    if (e.value == value) return e.name;
  return {};
}

template <class E, std::size_t N>
constexpr std::optional<E> value_of(const EnumName<E> (&table)[N], std::string_view name) {
  for (const auto& e : table)
    if (e.name == name) return e.value;
  return std::nullopt;
}

// "a, b, c": the names in table order, for messages.
template <class E, std::size_t N>
std::string names_of(const EnumName<E> (&table)[N]) {
  std::string out;
  for (const auto& e : table) {
    if (!out.empty()) out += ", ";
    out += e.name;
  }
  return out;
}

// value_of() as a Result: error kind "data", "'NAME' is not a WHAT (a, b, c)".
template <class E, std::size_t N>
Result<E> parse_enum(const EnumName<E> (&table)[N], std::string_view name, std::string_view what) {
  if (auto v = value_of(table, name)) return *v;
  return fail("data", "'" + std::string(name) + "' is not a " + std::string(what) + " (" +
                          names_of(table) + ")");
}

}  // namespace kforge
