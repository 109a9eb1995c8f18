// The fixture of function_lengths_test.py: each function's expected length is in its name.
// clang-format off
#include <string>

namespace demo {

int four_lines(int x) {
  if (x > 0) { return x; }
  return -x;
}

struct Holder {
  Holder() : a_(1), b_{2} {
    a_ += b_;
  }  // three lines
  int method_three() const {
    return a_;
  }
  int a_, b_;
};

std::string braces_in_text_eight() {
  std::string a = "{{{ not a block";
  std::string b = R"x({ nor ) this })x";
  char c = '{';
  // { a comment
  /* and } another */
  return a + b + c;
}

auto trailing_six(int x) -> int {
  for (int i = 0; i < x; ++i) {
    x += i;
  }
  return x;
}

void outer_nine() {
  auto lambda_four = [&](int y) {
    y += 1;
    return y;
  };
  auto capture_three = [] {
    return 0;
  };
}

}  // namespace demo
