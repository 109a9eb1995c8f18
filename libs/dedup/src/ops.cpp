// The operations a kernel computes on values (signature.hpp, Signature::ops), told apart from its
// index arithmetic by a small data-flow pass over its statements.
//
// A kernel's statements are read one logical line at a time. Each expression is scanned in one of
// three contexts:
//  - index: the pointer of a load or store, its mask and other options, the arguments of
//    program_id, arange, range, cdiv, make_block_ptr and advance, shapes, subscripts, `for`
//    headers and the conditions of `if` and `while`. What is computed there is left out;
//  - sink: a stored value (tl.store's value, an atomic's value), a returned value, the arguments
//    of a call made as a statement (a helper that stores);
//  - own: the right-hand side of an assignment, outside the two above: it belongs to the
//    variables assigned.
// The operations of a sink count, and so do those of every assignment to a name a sink reads,
// directly or through other names (flow-insensitive: every assignment to a name counts), or to a
// name holding data that an index reads (a gather). An operator counts only when one of its
// operands holds data (Parser below), a call of a tl/libdevice/math function always. So
// `offs = pid * BLOCK + tl.arange(0, BLOCK)`, `mask = offs < n` and `p += BLOCK * stride` add
// nothing; `y = tl.exp(x - m)` does when y is stored.

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "tokens.hpp"

namespace kforge::dedup::detail {
namespace {

using Toks = std::vector<std::string_view>;

bool is_ident(std::string_view t) {
  auto c = static_cast<unsigned char>(t[0]);
  return std::isalpha(c) != 0 || c == '_' || c >= 0x80;
}
bool is_number(std::string_view t) {
  auto c = static_cast<unsigned char>(t[0]);
  return std::isdigit(c) != 0 || (c == '.' && t.size() > 1);
}
bool is_string(std::string_view t) {
  return t.find_first_of("\"'") != std::string_view::npos;
}

// A number literal as a value: `1.0`, `1.` and `1` read the same.
std::string canonical(std::string_view literal) {
  std::string digits;
  for (char c : literal)
    if (c != '_') digits += c;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::strtod(digits.c_str(), nullptr));
  return buf;
}

// +1 for an opening bracket, -1 for a closing one, else 0.
int nesting(std::string_view t) {
  if (t.size() != 1) return 0;
  char c = t[0];
  return c == '(' || c == '[' || c == '{' ? 1 : c == ')' || c == ']' || c == '}' ? -1 : 0;
}

template <std::size_t N>
bool one_of(std::string_view t, const std::string_view (&set)[N]) {
  return std::find(std::begin(set), std::end(set), t) != std::end(set);
}

// Functions kernels call that move or index data rather than compute (not operations).
constexpr std::string_view kData[] = {
    "load", "store", "program_id", "arange", "make_block_ptr", "advance", "num_programs",
    "multiple_of", "max_contiguous", "cdiv", "static_range", "to", "zeros", "full", "zeros_like",
    "full_like", "reshape", "view", "broadcast_to", "expand_dims", "trans", "permute", "split",
    "join", "cast", "static_assert", "debug_barrier", "device_assert", "range", "constexpr",
    "pointer_type", "next_power_of_2", "make_tensor_descriptor", "load_tensor_descriptor",
    "store_tensor_descriptor", "assume", "where", "empty",
    // Triton-distributed's loads and stores
    "ld", "st", "ld_vector", "st_vector", "num_threads"};

constexpr std::string_view kOperators[] = {"+", "-",  "*",  "/",   "//", "%",  "**", "<",
                                           ">", "<=", ">=", "==",  "!=", "&",  "|",  "^",
                                           "~", "<<", ">>", "and", "or", "not"};
constexpr std::string_view kAssign[] = {
    "=", "+=", "-=", "*=", "/=", "//=", "%=", "**=", "&=", "|=", "^=", ">>=", "<<="};

// Calls whose arguments are all index: offsets, ids, bounds, shapes, hints, dtypes.
constexpr std::string_view kIndexCalls[] = {"arange",
                                            "program_id",
                                            "num_programs",
                                            "range",
                                            "static_range",
                                            "cdiv",
                                            "multiple_of",
                                            "max_contiguous",
                                            "make_block_ptr",
                                            "advance",
                                            "make_tensor_descriptor",
                                            "next_power_of_2",
                                            "to",
                                            "static_assert",
                                            "device_assert",
                                            "assume",
                                            "constexpr",
                                            "pointer_type",
                                            "zeros",
                                            "empty",
                                            "num_threads",
                                            "debug_barrier",
                                            "len",
                                            "int",
                                            "isinstance",
                                            "print",
                                            "static_print",
                                            "device_print"};
constexpr std::string_view kLoads[] = {"load", "ld", "ld_vector", "load_tensor_descriptor"};
constexpr std::string_view kStores[] = {"store", "st", "st_vector", "store_tensor_descriptor"};
// The first argument is a value, the others shapes, axes or dtypes.
constexpr std::string_view kShapeCalls[] = {"reshape",   "view",      "broadcast_to", "expand_dims",
                                            "permute",   "trans",     "cast",         "split",
                                            "full_like", "zeros_like"};
// Keyword arguments that configure a call rather than feed it values.
constexpr std::string_view kConfigKeywords[] = {"axis",
                                                "dim",
                                                "dtype",
                                                "keep_dims",
                                                "out_dtype",
                                                "input_precision",
                                                "allow_tf32",
                                                "max_num_imprecise_acc",
                                                "return_indices",
                                                "return_indices_tie_break_left",
                                                "sanitize_overflow",
                                                "fp_downcast_rounding",
                                                "bitcast",
                                                "mask",
                                                "boundary_check",
                                                "padding_option",
                                                "cache_modifier",
                                                "eviction_policy",
                                                "volatile",
                                                "sem",
                                                "scope",
                                                "num_stages",
                                                "loop_unroll_factor",
                                                "flatten",
                                                "can_reorder",
                                                "combine_fn",
                                                "reverse",
                                                "is_pure",
                                                "pack",
                                                "shape",
                                                "strides",
                                                "offsets",
                                                "block_shape",
                                                "order",
                                                "base"};

enum class Ctx { index, own, sink };

// What one statement's expressions feed: the names they read and the operations they apply, by
// context; index context keeps only the names it reads (a pointer computed from loaded data is a
// gather, whose arithmetic is the kernel's own).
struct Flow {
  Toks own_refs, sink_refs, index_refs;
  std::vector<std::string> own_ops, sink_ops;
  // The first name of the pointer of each load through a block of pointers (data read) and of
  // each store or atomic (data written): the tensor, or a name its pointers were computed from.
  Toks reads, writes;
  Toks scalar_reads;  // the same of loads through a scalar pointer (a length, a slope, a scale)
  void ref(Ctx c, std::string_view t) {
    (c == Ctx::sink ? sink_refs : c == Ctx::own ? own_refs : index_refs).push_back(t);
  }
  void op(Ctx c, std::string t) {
    if (c != Ctx::index) (c == Ctx::sink ? sink_ops : own_ops).push_back(std::move(t));
  }
};

using Names = std::unordered_set<std::string_view>;
// A name holding data -> the operation at the top of its last assignment (Parser::top).
using Tops = std::unordered_map<std::string_view, std::string>;

// Whether tokens compute a block of offsets or pointers (an arange, a block pointer, a tensor
// descriptor, or a name assigned from one): a load through them reads a tensor's values; a load
// through a scalar pointer reads a length or an offset (`tl.load(seq_lens + batch)`).
bool vector_tokens(const Toks& t, std::size_t b, std::size_t e, const Names& vectors) {
  static constexpr std::string_view kVector[] = {"arange", "make_block_ptr", "advance",
                                                 "make_tensor_descriptor"};
  for (std::size_t i = b; i < e; ++i)
    if (is_ident(t[i]) && (one_of(t[i], kVector) || vectors.count(t[i]) > 0)) return true;
  return false;
}

// The index of the bracket closing the one at `open`, or `end` when it does not close.
std::size_t closing(const Toks& t, std::size_t open, std::size_t end) {
  int depth = 0;
  for (std::size_t i = open; i < end; ++i) {
    depth += nesting(t[i]);
    if (depth == 0) return i;
  }
  return end;
}

// The first name tokens [b, e) read: not a module or function called, an attribute or a keyword
// argument's name (`base=` of make_block_ptr). `x_ptr + offs` -> x_ptr, `tl.make_block_ptr(base=o,
// ...)` -> o.
std::string_view first_name(const Toks& t, std::size_t b, std::size_t e) {
  for (std::size_t i = b; i < e; ++i) {
    if (!is_ident(t[i]) || is_string(t[i]) || (i > 0 && t[i - 1] == ".")) continue;
    if (i + 1 < e && (t[i + 1] == "(" || t[i + 1] == "." || t[i + 1] == "=")) continue;
    if (t[i] == "None" || t[i] == "True" || t[i] == "False" || t[i] == "if" || t[i] == "else")
      continue;
    return t[i];
  }
  return {};
}

// An operation as compared: division spelled as a libdevice call is division, and base-2
// exponentials and logarithms are the natural ones (a rewrite scales by log2(e) beside them).
std::string op_name(std::string_view name) {
  if (name == "fdiv" || name == "div_rn" || name == "fast_dividef") return "/";
  if (name == "exp2" || name == "fast_expf" || name == "fast_exp2f") return "exp";
  if (name == "log2" || name == "fast_logf" || name == "fast_log2f") return "log";
  return std::string(name);
}

// Python's binding powers of the infix operators kernels use; 0 for a token that is none.
int infix_power(std::string_view op) {
  if (op.size() > 3) return 0;
  static constexpr std::pair<std::string_view, int> kPower[] = {
      {"if", 1},  {"or", 2}, {"and", 3}, {"<", 5},  {">", 5},   {"<=", 5}, {">=", 5},
      {"==", 5},  {"!=", 5}, {"in", 5},  {"is", 5}, {"not", 5}, {"|", 6},  {"^", 7},
      {"&", 8},   {"<<", 9}, {">>", 9},  {"+", 10}, {"-", 10},  {"*", 11}, {"/", 11},
      {"//", 11}, {"%", 11}, {"@", 11},  {"**", 13}};
  for (auto [o, p] : kPower)
    if (o == op) return p;
  return 0;
}

// A Pratt parser over one expression's tokens that records, in its context, the names read and
// the operations applied to data: an operator counts when one of its operands depends on data (a
// load through a block of pointers, an atomic, random numbers, or a name assigned from one), so
// `max_index + pid * BLOCK` counts `+` and not `*`; a call of a tl/libdevice/math function counts
// always (and depends on data when its arguments do). Each parse returns whether its value depends
// on data.
struct Parser {
  const Toks& t;
  std::size_t i, e;
  Ctx ctx;
  Flow& f;
  const Names& data;
  const Names& vectors;
  const Tops& tops;
  // The operation at the top of the expression parsed last: "x" for data as read (a load, a
  // name holding data), "" when it holds no data (edge below).
  std::string top;

  // An edge of the data flow: operation `op` applies to a value computed by `from`, written
  // `>op;from` (`dy * (1 - y)`: `>*;-`, `>-;x`). A scale by something that is not data (`x *
  // LOG2_E`, `acc / n`) passes its operand's top through, so a rewrite that scales keeps edges.
  void edge(const std::string& op, const std::string& from) {
    if (!from.empty()) f.op(ctx, ">" + op + ";" + from);
  }

  bool at(std::string_view s) const { return i < e && t[i] == s; }

  // Comma-separated expressions up to e.
  bool all() {
    if (ctx == Ctx::index) {
      for (std::size_t k = i; k < e; ++k)
        if (is_ident(t[k]) && !is_string(t[k]) && (k == 0 || t[k - 1] != ".") &&
            (k + 1 >= e || t[k + 1] != "("))
          f.ref(ctx, t[k]);
      i = e;
      return false;
    }
    bool d = false;
    while (i < e) {
      std::size_t from = i;
      d = expr(0) || d;
      if (i == from) ++i;  // `,`, `:` of a slice, `=` of a keyword: not an expression
    }
    return d;
  }

  bool sub(std::size_t b, std::size_t end, Ctx c) {
    Parser p{t, b, end, c, f, data, vectors, tops, {}};
    bool d = p.all();
    top = d ? p.top : std::string();
    return d;
  }

  bool expr(int min_power) {
    bool d = prefix();
    std::string lhs = d ? top : std::string();
    while (i < e) {
      std::string_view op = t[i];
      int power = infix_power(op);
      if (power == 0 || power < min_power) break;
      ++i;
      if (op == "if") {  // a if c else b: c is a condition
        expr(2);
        if (at("else")) ++i;
        bool other = expr(1);
        if (!d && other) lhs = top;
        d = other || d;
        continue;
      }
      if ((op == "not" && at("in")) || (op == "is" && at("not"))) ++i;
      bool rhs = expr(op == "**" ? power : power + 1);
      std::string rtop = rhs ? top : std::string();
      if ((d || rhs) && one_of(op, kOperators)) {
        std::string o(op);
        f.op(ctx, o);
        if ((op == "*" || op == "/") && d != rhs) {
          lhs = d ? lhs : rtop;  // a scale: its operand's top passes through
        } else {
          edge(o, lhs), edge(o, rtop);
          lhs = std::move(o);
        }
      }
      d = d || rhs;
    }
    top = d ? lhs : std::string();
    return d;
  }

  bool prefix() {
    if (i >= e) return false;
    std::string_view tok = t[i];
    if (tok == "-" || tok == "+" || tok == "~" || tok == "not") {
      ++i;
      bool d = expr(tok == "not" ? 4 : 12);
      // A negation is its own operation (`-x` is not `x - y`).
      if (d && tok != "+") {
        std::string o = tok == "-" ? std::string("neg") : std::string(tok);
        f.op(ctx, o);
        edge(o, top);
        top = o;
      }
      return d;
    }
    if (tok == "*" || tok == "**") {  // unpacked arguments
      ++i;
      return expr(12);
    }
    if (tok == "lambda") {
      i = e;
      top.clear();
      return false;
    }
    if (tok == "(" || tok == "[" || tok == "{") {
      std::size_t close = closing(t, i, e);
      bool d = tok == "{" ? false : sub(i + 1, close, ctx);
      i = std::min(close + 1, e);
      return postfix(d, {});
    }
    ++i;
    top.clear();
    if (!is_ident(tok) || is_string(tok)) return postfix(false, {});
    if (tok == "None" || tok == "True" || tok == "False") return false;
    f.ref(ctx, tok);
    bool d = data.count(tok) > 0;
    if (d) {
      auto it = tops.find(tok);
      top = it == tops.end() ? std::string("x") : it->second;
    }
    return postfix(d, tok);
  }

  // Attributes, calls and subscripts after a primary.
  bool postfix(bool d, std::string_view name) {
    bool attribute = false;
    std::string_view root = name;
    while (i < e) {
      if (at(".") && i + 1 < e && is_ident(t[i + 1])) {
        name = t[i + 1], attribute = true;
        i += 2;
      } else if (at("(")) {
        std::size_t close = closing(t, i, e);
        std::string receiver = d ? top : std::string();
        d = call(name, attribute, d, vectors.count(root) > 0, i, close, receiver);
        i = std::min(close + 1, e);
        name = {}, attribute = false;
      } else if (at("[")) {
        std::size_t close = closing(t, i, e);
        std::string kept = top;
        sub(i + 1, close, Ctx::index);
        top = kept;
        i = std::min(close + 1, e);
      } else {
        break;
      }
    }
    return d;
  }

  // A call of `name` (after a `.` when attribute) on a receiver, arguments between open and close.
  bool call(std::string_view name, bool attribute, bool receiver, bool vector_receiver,
            std::size_t open, std::size_t close, const std::string& receiver_top) {
    // A libdevice function imported by name (`div_rn(x, y)`) is the operation it names.
    bool op_call = (attribute && !one_of(name, kData)) || (!attribute && op_name(name) != name);
    if (op_call)
      // Division spelled as a libdevice call is division.
      f.op(ctx, op_name(name));
    bool load = attribute && one_of(name, kLoads), store = attribute && one_of(name, kStores),
         atomic = attribute && name.starts_with("atomic_"), shape = one_of(name, kShapeCalls),
         index_call = one_of(name, kIndexCalls);
    bool d = false, vector = vector_receiver;
    Toks pointer_reads;
    std::vector<std::string> arg_tops;  // the tops of its data arguments outside index context
    std::size_t pos = 0;
    for (std::size_t s = open + 1; s < close;) {
      std::size_t end = s;
      for (int depth = 0; end < close; ++end) {
        depth += nesting(t[end]);
        if (depth == 0 && t[end] == ",") break;
      }
      std::string_view kw;
      std::size_t v = s;
      if (end - s >= 2 && is_ident(t[s]) && t[s + 1] == "=") kw = t[s], v = s + 2;
      Ctx c = ctx;
      if (index_call) {
        c = Ctx::index;
      } else if (!kw.empty()) {
        if (one_of(kw, kConfigKeywords)) c = Ctx::index;
        if ((store || atomic) && (kw == "value" || kw == "val" || kw == "cmp")) c = Ctx::sink;
      } else if (load) {
        c = pos == 2 ? ctx : Ctx::index;  // pointer, mask, other
      } else if (store) {
        c = pos == 1 ? Ctx::sink : Ctx::index;  // pointer, value, mask
      } else if (atomic) {
        c = pos == 1 || (pos == 2 && name == "atomic_cas") ? Ctx::sink : Ctx::index;
      } else if (shape) {
        c = pos == 0 ? ctx : Ctx::index;
      } else if (name == "full") {
        c = pos == 1 ? ctx : Ctx::index;  // shape, value, dtype
      }
      // A constant stored as it is (ones and zeros from one template) is what the kernel computes.
      if (c == Ctx::sink && end == v + 1 && is_number(t[v])) f.op(c, "=" + canonical(t[v]));
      if (load && pos == 0) vector = vector || vector_tokens(t, v, end, vectors);
      if ((load || store || atomic) && pos == 0 && kw.empty())
        if (std::string_view root = first_name(t, v, end); !root.empty())
          (load ? pointer_reads : f.writes).push_back(root);
      bool arg = sub(v, end, c);
      if (arg && c != Ctx::index) arg_tops.push_back(top);
      d = arg || d;
      ++pos;
      s = end + 1;
    }
    // What the call's value is computed by: the operation it applies, else what it passes on.
    std::string from = !arg_tops.empty() ? arg_tops.front() : receiver_top;
    if (op_call) {
      std::string o = op_name(name);
      for (const auto& a : arg_tops) edge(o, a);
      if (arg_tops.empty()) edge(o, receiver_top);
      from = o;
    }
    top = load || atomic || name.starts_with("rand") || name == "philox" || from.empty()
              ? std::string("x")
              : from;
    (load && vector ? f.reads : f.scalar_reads)
        .insert((load && vector ? f.reads : f.scalar_reads).end(), pointer_reads.begin(),
                pointer_reads.end());
    if (load) return vector;
    // Random numbers are data drawn from offsets; other functions compute on their arguments.
    if (atomic || name.starts_with("rand") || name == "philox") return true;
    if (name == "to") return receiver;
    return !index_call && (receiver || d);
  }
};

// The kernel's logical lines: newlines inside brackets, strings and after a backslash do not end
// one, `;` does; comments are dropped by the tokenizer later.
std::vector<std::string_view> logical_lines(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t start = 0, i = 0;
  int depth = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '#') {
      while (i < s.size() && s[i] != '\n') ++i;
      continue;
    }
    if (c == '"' || c == '\'') {
      bool triple = i + 2 < s.size() && s[i + 1] == c && s[i + 2] == c;
      std::size_t j = i + (triple ? 3 : 1);
      while (j < s.size()) {
        if (s[j] == '\\') {
          j += 2;
          continue;
        }
        if (!triple && s[j] == '\n') break;
        if (s[j] == c && (!triple || (j + 2 < s.size() && s[j + 1] == c && s[j + 2] == c))) {
          j += triple ? 3 : 1;
          break;
        }
        ++j;
      }
      i = j;
      continue;
    }
    if (c == '\\') {
      i += 2;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
    if (depth == 0 && (c == '\n' || c == ';')) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
    ++i;
  }
  out.push_back(s.substr(start));
  return out;
}

struct Def {
  Toks refs;
  std::string_view first;  // the first name its value reads (first_name)
  std::vector<std::string> ops;
  bool data = false;    // the value assigned depends on data
  bool vector = false;  // it is a block of offsets or pointers (vector_tokens)
};

struct Kernel {
  std::unordered_map<std::string_view, std::vector<Def>> defs;
  // Names assigned a load through a scalar pointer -> what it read (Flow::scalar_reads): a tensor
  // the kernel reads when the name reaches a sink.
  std::unordered_map<std::string_view, Toks> scalar;
  Flow sinks;  // sinks' names and operations, and the names read in index context
};

// The names holding data, and those holding blocks of offsets or pointers.
struct Known {
  Names data, vectors;
  Tops tops;
};

void statement(const Toks& t, std::size_t b, std::size_t e, Kernel& k, Known& n);

// A compound statement's header (`if c:`, `for i in r:`, `def f(...):`) is index; a body on the
// same line is a statement of its own.
bool compound(const Toks& t, std::size_t b, std::size_t e, Kernel& k, Known& n) {
  static constexpr std::string_view kCompound[] = {"if",      "elif", "else",  "while",
                                                   "for",     "with", "try",   "except",
                                                   "finally", "def",  "async", "class"};
  if (!one_of(t[b], kCompound)) return false;
  int depth = 0;
  for (std::size_t i = b; i < e; ++i) {
    depth += nesting(t[i]);
    if (t[i] == "lambda") return true;
    if (depth == 0 && t[i] == ":") {
      if (t[b] != "def" && t[b] != "async" && t[b] != "class")
        Parser{t, b + 1, i, Ctx::index, k.sinks, n.data, n.vectors, n.tops, {}}.all();
      if (i + 1 < e) statement(t, i + 1, e, k, n);
      return true;
    }
  }
  return true;
}

void statement(const Toks& t, std::size_t b, std::size_t e, Kernel& k, Known& n) {
  if (b >= e) return;
  static constexpr std::string_view kSkipped[] = {"assert", "pass",   "break",    "continue",
                                                  "raise",  "global", "nonlocal", "del",
                                                  "import", "from"};
  if (compound(t, b, e, k, n) || one_of(t[b], kSkipped)) return;
  if (t[b] == "return" || t[b] == "yield") {
    Parser{t, b + 1, e, Ctx::sink, k.sinks, n.data, n.vectors, n.tops, {}}.all();
    return;
  }
  // The last assignment operator at depth 0: targets before it, the value after.
  std::size_t assign = e;
  int depth = 0;
  for (std::size_t i = b; i < e; ++i) {
    depth += nesting(t[i]);
    if (depth == 0 && t[i].back() == '=' && one_of(t[i], kAssign)) assign = i;
  }
  if (assign == e) {  // an expression: a call made for what it stores
    Parser{t, b, e, Ctx::sink, k.sinks, n.data, n.vectors, n.tops, {}}.all();
    return;
  }
  Flow f;
  Def d;
  Parser value{t, assign + 1, e, Ctx::own, f, n.data, n.vectors, n.tops, {}};
  d.data = value.all();
  d.vector = vector_tokens(t, assign + 1, e, n.vectors);
  d.first = first_name(t, assign + 1, e);
  Toks targets;
  depth = 0;
  for (std::size_t i = b; i < assign; ++i) {
    depth += nesting(t[i]);
    if (depth == 0 && t[i] == ":") break;  // an annotation follows
    if (depth == 0 && is_ident(t[i]) && !is_string(t[i]) && (i == b || t[i - 1] != "."))
      targets.push_back(t[i]);
  }
  d.refs = std::move(f.own_refs);
  d.ops = std::move(f.own_ops);
  std::string top = d.data ? value.top : std::string();
  if (t[assign] != "=") {  // `acc += x`: acc = acc + x
    bool rhs = d.data;
    for (auto x : targets) d.data = d.data || n.data.count(x) > 0;
    std::string op(t[assign].substr(0, t[assign].size() - 1));
    if (d.data) {
      d.ops.push_back(op);
      std::string was = "x";  // the target's top before
      if (!targets.empty())
        if (auto it = n.tops.find(targets.front()); it != n.tops.end()) was = it->second;
      bool target = !targets.empty() && n.data.count(targets.front()) > 0;
      if (rhs && target) {
        d.ops.push_back(">" + op + ";" + top);
        d.ops.push_back(">" + op + ";" + was);
        top = op;
      } else if (rhs) {
        // `acc += x` on a zero block: x's top
      } else if (op == "*" || op == "/") {
        top = was;  // a scale by something that is not data
      } else {
        d.ops.push_back(">" + op + ";" + was);
        top = op;
      }
    }
    d.refs.insert(d.refs.end(), targets.begin(), targets.end());
  }
  auto& s = k.sinks;
  s.sink_refs.insert(s.sink_refs.end(), f.sink_refs.begin(), f.sink_refs.end());
  s.sink_ops.insert(s.sink_ops.end(), f.sink_ops.begin(), f.sink_ops.end());
  s.index_refs.insert(s.index_refs.end(), f.index_refs.begin(), f.index_refs.end());
  s.reads.insert(s.reads.end(), f.reads.begin(), f.reads.end());
  s.writes.insert(s.writes.end(), f.writes.begin(), f.writes.end());
  for (auto target : targets) {
    if (!f.scalar_reads.empty()) k.scalar[target] = f.scalar_reads;
    if (d.data) n.data.insert(target);
    if (d.data && !top.empty()) n.tops[target] = top;
    if (d.vector) n.vectors.insert(target);
    k.defs[target].push_back(d);
  }
}

// A function that neither loads nor stores (a pointwise body, a reduction's combine function)
// computes on its parameters: the names in its `def` line's parentheses.
void parameters(const Toks& def, Names& data) {
  int depth = 0;
  for (std::size_t i = 0; i < def.size(); ++i) {
    depth += nesting(def[i]);
    if (depth == 1 && i > 0 && (def[i - 1] == "(" || def[i - 1] == ",") && is_ident(def[i]))
      data.insert(def[i]);
  }
}

// The kernel's tensors: the parameter each data read and each write goes back to (through the
// first name of each pointer's first assignment: `ptrs = X + offs`, `p = tl.make_block_ptr(base=X,
// ...)`), counted as one operation `io:<reads>/<writes>` when it writes. A sibling that computes
// another function from one template reads or writes another number of tensors (an addmm's bias,
// a var_mean's mean, a decay's slopes); a rewrite of the same math keeps them.
void io_shape(const std::vector<Toks>& lines, const Kernel& k, const Names& to_sinks,
              std::vector<std::string>& ops) {
  if (lines.empty() || k.sinks.writes.empty()) return;
  Toks reads = k.sinks.reads;
  for (auto name : to_sinks)
    if (auto it = k.scalar.find(name); it != k.scalar.end())
      reads.insert(reads.end(), it->second.begin(), it->second.end());
  Names params;
  parameters(lines[0], params);
  auto root = [&](std::string_view name) -> std::string_view {
    for (int step = 0; step < 8 && !name.empty(); ++step) {
      if (params.count(name) > 0) return name;
      auto it = k.defs.find(name);
      if (it == k.defs.end() || it->second.empty()) return {};
      name = it->second.front().first;
    }
    return {};
  };
  auto count = [&](const Toks& names) {
    Names seen;
    for (auto n : names)
      if (auto r = root(n); !r.empty()) seen.insert(r);
    return seen.size();
  };
  std::size_t writes = count(k.sinks.writes);
  if (writes == 0) return;
  ops.push_back("io:" + std::to_string(count(reads)) + "/" + std::to_string(writes));
}

}  // namespace

int code_lines(std::string_view kernel) {
  static constexpr std::string_view kCompound[] = {"if",   "elif", "else",   "while",  "for",
                                                   "with", "try",  "except", "finally"};
  // Lines that say nothing of their own: `else:` before an `if` is Python's `elif`.
  static constexpr std::string_view kBare[] = {"else", "try", "finally"};
  int n = 0;
  Toks toks;
  for (std::string_view line : logical_lines(kernel)) {
    toks.clear();
    tokenize(line, true, toks);
    if (toks.empty() || (toks.size() == 1 && is_string(toks[0]))) continue;  // a docstring
    n += one_of(toks[0], kBare) ? 0 : 1;
    if (!one_of(toks[0], kCompound)) continue;
    // `if c: x = 1` is two lines, as Python writes it back.
    int depth = 0;
    for (std::size_t i = 0; i < toks.size(); ++i) {
      depth += nesting(toks[i]);
      if (toks[i] == "lambda") break;
      if (depth == 0 && toks[i] == ":") {
        n += i + 1 < toks.size() ? 1 : 0;
        break;
      }
    }
  }
  return n;
}

void value_ops(std::string_view kernel, std::vector<std::string>& ops) {
  std::vector<Toks> lines;
  bool memory = false;  // it loads or stores
  for (std::string_view line : logical_lines(kernel)) {
    Toks toks;
    tokenize(line, true, toks);
    for (std::size_t i = 1; i < toks.size(); ++i)
      memory =
          memory || (toks[i - 1] == "." && (one_of(toks[i], kLoads) || one_of(toks[i], kStores) ||
                                            toks[i].starts_with("atomic_")));
    if (!toks.empty()) lines.push_back(std::move(toks));
  }
  Known n;
  if (!memory && !lines.empty()) parameters(lines[0], n.data);
  // Which names hold data and blocks of pointers: assignments from them, in statement order, again
  // until a pass adds none (a loop assigns a name before the statement that reads it).
  Kernel k;
  for (int pass = 0; pass < 8; ++pass) {
    k = Kernel{};
    std::size_t before = n.data.size() + n.vectors.size();
    for (const Toks& toks : lines) statement(toks, 0, toks.size(), k, n);
    if (n.data.size() + n.vectors.size() == before) break;
  }
  ops.insert(ops.end(), k.sinks.sink_ops.begin(), k.sinks.sink_ops.end());
  // What the sinks read, and the data a pointer or a condition reads (a gather's index).
  Toks todo = k.sinks.sink_refs;
  for (auto r : k.sinks.index_refs)
    if (n.data.count(r) > 0) todo.push_back(r);
  Names seen;
  while (!todo.empty()) {
    std::string_view name = todo.back();
    todo.pop_back();
    if (!seen.insert(name).second) continue;
    auto it = k.defs.find(name);
    if (it == k.defs.end()) continue;
    for (const Def& d : it->second) {
      ops.insert(ops.end(), d.ops.begin(), d.ops.end());
      todo.insert(todo.end(), d.refs.begin(), d.refs.end());
    }
  }
  io_shape(lines, k, seen, ops);
}

}  // namespace kforge::dedup::detail
