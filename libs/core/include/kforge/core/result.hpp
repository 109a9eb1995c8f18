#pragma once
// Result<T>: a value or an Error (an expected-like type; the project targets C++20).
//
//   Result<int> parse(...);
//   KF_TRY(auto n, parse(...));      // declares n, or returns the error from the enclosing
//   function KF_CHECK(store.exec(...));       // returns the error, if any
//
// Exceptions are kept for the fatal cases and caught once in apps/.

#include <cassert>
#include <type_traits>
#include <utility>
#include <variant>

#include "kforge/core/error.hpp"

namespace kforge {

struct Unexpected {
  Error error;
};
inline Unexpected fail(Error e) {
  return Unexpected{std::move(e)};
}
inline Unexpected fail(std::string kind, std::string message, Transient t = Transient::no) {
  return Unexpected{Error(std::move(kind), std::move(message), t)};
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Result(Unexpected u) : v_(std::in_place_index<1>, std::move(u.error)) {}
  Result(Error e) : v_(std::in_place_index<1>, std::move(e)) {}
  template <class U>
  requires(std::is_convertible_v<U, T> && !std::is_same_v<std::decay_t<U>, T> &&
           !std::is_same_v<std::decay_t<U>, Error> && !std::is_same_v<std::decay_t<U>, Unexpected>)
      Result(U&& u)
      : v_(std::in_place_index<0>, T(std::forward<U>(u))) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const& {
    assert(!ok());
    return std::get<1>(v_);
  }
  Error&& error() && {
    assert(!ok());
    return std::get<1>(std::move(v_));
  }

  T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Unexpected u) : err_(std::move(u.error)), ok_(false) {}
  Result(Error e) : err_(std::move(e)), ok_(false) {}

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  void value() const { assert(ok_); }
  const Error& error() const& {
    assert(!ok_);
    return err_;
  }
  Error&& error() && {
    assert(!ok_);
    return std::move(err_);
  }

 private:
  Error err_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace kforge

#define KF_CONCAT_INNER(a, b) a##b
#define KF_CONCAT(a, b) KF_CONCAT_INNER(a, b)

// KF_TRY(decl, expr): evaluates expr (a Result<T>); on error returns it, else binds decl.
#define KF_TRY(decl, expr)                                                        \
  auto KF_CONCAT(kf_try_, __LINE__) = (expr);                                     \
  if (!KF_CONCAT(kf_try_, __LINE__).ok())                                         \
    return ::kforge::Unexpected{std::move(KF_CONCAT(kf_try_, __LINE__)).error()}; \
  decl = std::move(KF_CONCAT(kf_try_, __LINE__)).value()

// KF_CHECK(expr): evaluates expr (any Result); on error returns it.
#define KF_CHECK(expr)                                                                \
  do {                                                                                \
    auto kf_check_r = (expr);                                                         \
    if (!kf_check_r.ok()) return ::kforge::Unexpected{std::move(kf_check_r).error()}; \
  } while (0)
