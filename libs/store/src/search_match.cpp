#include "kforge/store/search_match.hpp"

#include <sqlite3.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/store/samples.hpp"

namespace kforge::store {

namespace {

// The trigram tokenizer of one connection's FTS5, made once, kept as the function's user data.
class Trigrams {
 public:
  Trigrams(fts5_tokenizer api, Fts5Tokenizer* tok) : api_(api), tok_(tok) {}
  ~Trigrams() { api_.xDelete(tok_); }
  Trigrams(const Trigrams&) = delete;
  Trigrams& operator=(const Trigrams&) = delete;

  // The tokens of `text` in order (as the index would store them for a document, or read them
  // for a query); false when the tokenizer fails.
  bool tokens(std::string_view text, int flags, std::vector<std::string>& out) {
    out.clear();
    return api_.xTokenize(tok_, &out, flags, text.data(), static_cast<int>(text.size()),
                          &Trigrams::add) == SQLITE_OK;
  }

 private:
  static int add(void* ctx, int /*flags*/, const char* token, int n, int /*start*/, int /*end*/) {
    static_cast<std::vector<std::string>*>(ctx)->emplace_back(token, static_cast<std::size_t>(n));
    return SQLITE_OK;
  }
  fts5_tokenizer api_;
  Fts5Tokenizer* tok_;
};

std::string_view text_of(sqlite3_value* v) {
  const auto* p = sqlite3_value_text(v);
  return {reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_value_bytes(v))};
}

// Whether `needle` occurs as a run of consecutive elements of `hay`.
bool holds_run(const std::vector<std::string>& hay, const std::vector<std::string>& needle) {
  if (needle.empty() || needle.size() > hay.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    std::size_t k = 0;
    while (k < needle.size() && hay[i + k] == needle[k]) ++k;
    if (k == needle.size()) return true;
  }
  return false;
}

void kf_search_holds(sqlite3_context* ctx, int /*argc*/, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL)
    return sqlite3_result_int(ctx, 0);
  auto* t = static_cast<Trigrams*>(sqlite3_user_data(ctx));
  std::vector<std::string> word, body;
  if (!t->tokens(text_of(argv[1]), FTS5_TOKENIZE_QUERY, word) ||
      !t->tokens(text_of(argv[0]), FTS5_TOKENIZE_DOCUMENT, body))
    return sqlite3_result_error(ctx, "kf_search_holds: the trigram tokenizer failed", -1);
  sqlite3_result_int(ctx, holds_run(body, word) ? 1 : 0);
}

Result<fts5_api*> fts5_of(Db& db) {
  fts5_api* api = nullptr;
  const std::string_view sql = store_queries()["fts5_api"];
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v2(db.raw(), sql.data(), static_cast<int>(sql.size()), &s, nullptr);
  if (rc == SQLITE_OK) {
    sqlite3_bind_pointer(s, 1, static_cast<void*>(&api), "fts5_api_ptr", nullptr);
    rc = sqlite3_step(s);
  }
  sqlite3_finalize(s);
  if (api == nullptr || api->iVersion < 2)
    return fail("sqlite", db.path() + ": this SQLite has no FTS5 (the search index needs it): " +
                              sqlite3_errstr(rc));
  return api;
}

}  // namespace

Status register_search_match(Db& db) {
  KF_TRY(fts5_api * api, fts5_of(db));
  void* user = nullptr;
  fts5_tokenizer tokenizer{};
  int rc = api->xFindTokenizer(api, "trigram", &user, &tokenizer);
  Fts5Tokenizer* tok = nullptr;
  if (rc == SQLITE_OK) rc = tokenizer.xCreate(user, nullptr, 0, &tok);
  if (rc != SQLITE_OK)
    return fail("sqlite", db.path() + ": no FTS5 trigram tokenizer: " + sqlite3_errstr(rc));
  auto owned = std::make_unique<Trigrams>(tokenizer, tok);
  rc = sqlite3_create_function_v2(
      db.raw(), "kf_search_holds", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, owned.get(),
      &kf_search_holds, nullptr, nullptr, [](void* p) { delete static_cast<Trigrams*>(p); });
  owned.release();  // SQLite owns it now (and destroys it even when the registration failed)
  if (rc != SQLITE_OK)
    return fail("sqlite", db.path() + ": cannot register kf_search_holds(): " + sqlite3_errstr(rc));
  return {};
}

}  // namespace kforge::store
