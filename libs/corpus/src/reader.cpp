#include "kforge/corpus/reader.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <vector>

namespace kforge::corpus {
namespace {

using ojson = nlohmann::ordered_json;

// nlohmann's messages start with "[json.exception.parse_error.101] " and end with the whole
// last token read, which for a long string is a page of text: keep the message, trim the token.
std::string tidy_parse_message(std::string what) {
  if (auto p = what.find("] "); p != std::string::npos && what[0] == '[') what = what.substr(p + 2);
  constexpr std::string_view kLast = "; last read: '";
  if (auto p = what.find(kLast); p != std::string::npos) {
    std::string token = what.substr(p + kLast.size());
    if (!token.empty() && token.back() == '\'') token.pop_back();
    if (token.size() > 40) token = "..." + token.substr(token.size() - 40);
    what = what.substr(0, p) + "; last read: '" + token + "'";
  }
  return what;
}

// Buffered file reader that counts lines, so SAX events can be placed in the file.
class Source {
 public:
  explicit Source(std::FILE* f) : f_(f), buf_(1 << 16) {}
  bool at_end() {
    if (pos_ < len_) return false;
    fill();
    return pos_ >= len_;
  }
  char peek() const { return buf_[pos_]; }
  void advance() {
    if (buf_[pos_] == '\n') ++line_;
    ++pos_;
    ++offset_;
  }
  std::int64_t line() const { return line_; }
  std::uint64_t offset() const { return offset_; }
  bool read_error() const { return std::ferror(f_) != 0; }

 private:
  void fill() {
    len_ = std::fread(buf_.data(), 1, buf_.size(), f_);
    pos_ = 0;
  }
  std::FILE* f_;
  std::vector<char> buf_;
  std::size_t pos_ = 0, len_ = 0;
  std::int64_t line_ = 1;
  std::uint64_t offset_ = 0;
};

// The input iterator nlohmann's parser reads from.
class SourceIter {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  explicit SourceIter(Source* s = nullptr) : s_(s) {}
  char operator*() const { return s_->peek(); }
  SourceIter& operator++() {
    s_->advance();
    return *this;
  }
  bool operator==(const SourceIter& o) const { return end() == o.end(); }
  bool operator!=(const SourceIter& o) const { return !(*this == o); }

 private:
  bool end() const { return s_ == nullptr || s_->at_end(); }
  Source* s_;
};

// SAX handler: expects one top-level array; builds each element as an ordered_json and hands it
// on, so memory holds one record at a time.
class ListHandler {
 public:
  using number_integer_t = ojson::number_integer_t;
  using number_unsigned_t = ojson::number_unsigned_t;
  using number_float_t = ojson::number_float_t;
  using string_t = ojson::string_t;
  using binary_t = ojson::binary_t;

  ListHandler(Source& src, const RecordFn& fn, const ProgressFn& progress, std::uint64_t total)
      : src_(src), fn_(fn), progress_(progress), total_(total) {}

  bool null() { return value(ojson(nullptr)); }
  bool boolean(bool v) { return value(ojson(v)); }
  bool number_integer(number_integer_t v) { return value(ojson(v)); }
  bool number_unsigned(number_unsigned_t v) { return value(ojson(v)); }
  bool number_float(number_float_t v, const string_t&) { return value(ojson(v)); }
  bool string(string_t& v) { return value(ojson(std::move(v))); }
  bool binary(binary_t&) { return value(ojson()); }

  bool start_object(std::size_t) {
    if (!top_level_seen()) return false;
    if (stack_.empty()) begin_record();
    stack_.push_back(ojson::object());
    return true;
  }
  bool key(string_t& k) {
    keys_.push_back(std::move(k));
    return true;
  }
  bool end_object() { return end_container(); }
  bool start_array(std::size_t) {
    if (!started_) {
      started_ = true;
      return true;
    }
    if (stack_.empty()) begin_record();
    stack_.push_back(ojson::array());
    return true;
  }
  bool end_array() {
    if (stack_.empty()) {
      finished_ = true;
      return true;
    }
    return end_container();
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) {
    std::string what = tidy_parse_message(ex.what());
    std::string where = started_ ? "record " + std::to_string(index_) + ": " : "";
    error_ = Error("parse", where + what + " (byte " + std::to_string(position) + ")");
    return false;
  }

  std::int64_t records() const { return index_; }
  bool finished() const { return finished_; }
  std::optional<Error>& error() { return error_; }

 private:
  bool top_level_seen() {
    if (started_) return true;
    error_ = Error("parse", "line " + std::to_string(src_.line()) +
                                ": not a JSON list: the top level must be '[' (use --format jsonl "
                                "for one object per line)");
    return false;
  }
  void begin_record() { pos_ = RecordPos{index_, src_.line()}; }
  bool value(ojson&& v) {
    if (!started_) {
      error_ = Error("parse", "line " + std::to_string(src_.line()) +
                                  ": not a JSON list: the top level is a single value");
      return false;
    }
    if (stack_.empty()) {
      begin_record();
      return deliver(std::move(v));
    }
    return add(std::move(v));
  }
  bool add(ojson&& v) {
    ojson& top = stack_.back();
    if (top.is_object()) {
      top[keys_.back()] = std::move(v);
      keys_.pop_back();
    } else {
      top.push_back(std::move(v));
    }
    return true;
  }
  bool end_container() {
    ojson v = std::move(stack_.back());
    stack_.pop_back();
    if (stack_.empty()) return deliver(std::move(v));
    return add(std::move(v));
  }
  bool deliver(ojson&& v) {
    auto r = fn_(std::move(v), pos_);
    ++index_;
    if (progress_ && (index_ % 64) == 0) progress_({src_.offset(), total_, index_});
    if (!r.ok()) {
      error_ = std::move(r).error();
      callback_failed_ = true;
      return false;
    }
    return true;
  }

  Source& src_;
  const RecordFn& fn_;
  const ProgressFn& progress_;
  std::uint64_t total_;
  std::vector<ojson> stack_;
  std::vector<std::string> keys_;
  RecordPos pos_;
  std::int64_t index_ = 0;
  bool started_ = false;
  bool finished_ = false;
  bool callback_failed_ = false;
  std::optional<Error> error_;
};

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

Result<std::int64_t> read_json_list(std::FILE* f, std::uint64_t total, const RecordFn& fn,
                                    const ProgressFn& progress) {
  Source src(f);
  ListHandler h(src, fn, progress, total);
  bool ok = ojson::sax_parse(SourceIter(&src), SourceIter(), &h, ojson::input_format_t::json, true);
  if (h.error()) return *h.error();
  if (src.read_error()) return fail("io", std::string("read failed: ") + std::strerror(errno));
  if (!ok || !h.finished())
    return fail("parse", "unexpected end of input after record " + std::to_string(h.records()));
  if (progress) progress({total, total, h.records()});
  return h.records();
}

Result<std::int64_t> read_jsonl(std::FILE* f, std::uint64_t total, const RecordFn& fn,
                                const ProgressFn& progress) {
  std::int64_t line_no = 0, index = 0;
  std::uint64_t offset = 0;
  std::string line;
  char* buf = nullptr;
  std::size_t cap = 0;
  std::unique_ptr<char, decltype(&std::free)> guard(nullptr, &std::free);
  while (true) {
    ssize_t n = ::getline(&buf, &cap, f);
    guard.release();
    guard.reset(buf);
    if (n < 0) break;
    ++line_no;
    offset += static_cast<std::uint64_t>(n);
    std::string_view sv(buf, static_cast<std::size_t>(n));
    while (!sv.empty() && (sv.back() == '\n' || sv.back() == '\r')) sv.remove_suffix(1);
    if (sv.find_first_not_of(" \t") == std::string_view::npos) continue;
    ojson rec;
    try {
      rec = ojson::parse(sv);
    } catch (const ojson::parse_error& e) {
      std::string what = tidy_parse_message(e.what());
      // nlohmann counts lines within this one line; the file's line is given instead.
      if (auto q = what.find("at line 1, column"); q != std::string::npos)
        what.replace(q, std::strlen("at line 1, column"), "at column");
      return fail("parse", "record " + std::to_string(index) + " (line " + std::to_string(line_no) +
                               "): " + what);
    }
    KF_CHECK(fn(std::move(rec), RecordPos{index, line_no}));
    ++index;
    if (progress && (index % 64) == 0) progress({offset, total, index});
  }
  if (std::ferror(f)) return fail("io", std::string("read failed: ") + std::strerror(errno));
  if (progress) progress({total, total, index});
  return index;
}

}  // namespace

Result<Format> parse_format(const std::string& s) {
  if (s == "json") return Format::json;
  if (s == "jsonl" || s == "ndjson") return Format::jsonl;
  if (s == "auto" || s.empty()) return Format::automatic;
  return fail("usage", "unknown format '" + s + "' (expected json, jsonl or auto)");
}

Result<std::int64_t> read_records(const std::filesystem::path& file, Format format,
                                  const RecordFn& on_record, const ProgressFn& on_progress) {
  const bool from_stdin = file == "-";
  const std::string name = from_stdin ? std::string("stdin") : file.string();
  std::unique_ptr<std::FILE, FileCloser> f;
  std::uint64_t total = 0;
  if (from_stdin) {
    // Spooled to an anonymous temporary file: the format check reads ahead and rewinds, and a
    // pipe cannot rewind.
    f.reset(std::tmpfile());
    if (!f)
      return fail("io",
                  std::string("stdin: cannot create a temporary file: ") + std::strerror(errno));
    std::vector<char> buf(1 << 16);
    std::size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), stdin)) > 0) {
      if (std::fwrite(buf.data(), 1, n, f.get()) != n)
        return fail("io",
                    std::string("stdin: writing the temporary copy: ") + std::strerror(errno));
      total += n;
    }
    if (std::ferror(stdin)) return fail("io", std::string("stdin: ") + std::strerror(errno));
    std::rewind(f.get());
  } else {
    f.reset(std::fopen(file.c_str(), "rb"));
    if (!f) return fail("io", name + ": " + std::strerror(errno));
    std::error_code ec;
    total = std::filesystem::file_size(file, ec);
    if (ec) total = 0;
  }

  if (format == Format::automatic) {
    int c;
    std::int64_t line = 1;
    while ((c = std::fgetc(f.get())) != EOF && (c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
                                                c == 0xEF || c == 0xBB || c == 0xBF)) {
      if (c == '\n') ++line;
    }
    if (c == EOF) return fail("parse", name + ": the file is empty");
    if (c == '[')
      format = Format::json;
    else if (c == '{')
      format = Format::jsonl;
    else
      return fail("parse", name + ":" + std::to_string(line) +
                               ": neither a JSON list ('[') nor JSON Lines ('{'): starts with '" +
                               std::string(1, static_cast<char>(c)) + "'");
    std::rewind(f.get());
  }
  Result<std::int64_t> r = format == Format::json
                               ? read_json_list(f.get(), total, on_record, on_progress)
                               : read_jsonl(f.get(), total, on_record, on_progress);
  if (!r.ok()) return std::move(r).error().context(name);
  if (*r == 0) return fail("parse", name + ": no records");
  return r;
}

}  // namespace kforge::corpus
