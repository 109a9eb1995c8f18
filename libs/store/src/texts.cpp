#include "kforge/store/texts.hpp"

#include <zstd.h>

#include <map>
#include <memory>

#include "kforge/core/sha256.hpp"
#include "kforge/store/samples.hpp"

namespace kforge::store {

namespace {

constexpr int kZstdLevel = 3;

struct CctxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DctxFree {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};

ZSTD_CCtx* cctx() {
  thread_local std::unique_ptr<ZSTD_CCtx, CctxFree> c(ZSTD_createCCtx());
  return c.get();
}
ZSTD_DCtx* dctx() {
  thread_local std::unique_ptr<ZSTD_DCtx, DctxFree> c(ZSTD_createDCtx());
  return c.get();
}

struct CdictFree {
  void operator()(ZSTD_CDict* d) const { ZSTD_freeCDict(d); }
};
struct DdictFree {
  void operator()(ZSTD_DDict* d) const { ZSTD_freeDDict(d); }
};
// Digested dictionaries of this thread, by the SHA-256 of the dictionary's bytes (the same in
// every database, so the caches need no database key). A handful at most: one per template set.
std::map<std::string, std::unique_ptr<ZSTD_CDict, CdictFree>>& cdicts() {
  thread_local std::map<std::string, std::unique_ptr<ZSTD_CDict, CdictFree>> m;
  return m;
}
std::map<std::string, std::unique_ptr<ZSTD_DDict, DdictFree>>& ddicts() {
  thread_local std::map<std::string, std::unique_ptr<ZSTD_DDict, DdictFree>> m;
  return m;
}

Result<std::string> text_by_id(Db& db, std::int64_t id);

Result<const ZSTD_DDict*> ddict(Db& db, std::int64_t id, const std::string& sha) {
  auto& m = ddicts();
  if (auto it = m.find(sha); it != m.end()) return it->second.get();
  KF_TRY(std::string bytes, text_by_id(db, id));
  ZSTD_DDict* d = ZSTD_createDDict(bytes.data(), bytes.size());
  if (d == nullptr)
    return fail("store", db.path() + ": text " + std::to_string(id) +
                             ": cannot be used as a zstd dictionary");
  return m.emplace(sha, d).first->second.get();
}

// The dictionary new texts use (id and digest), if one is registered.
Result<std::optional<std::pair<std::int64_t, const ZSTD_CDict*>>> current_cdict(Db& db) {
  using Out = std::optional<std::pair<std::int64_t, const ZSTD_CDict*>>;
  KF_TRY(Stmt * s, db.cached(store_queries()["current_dictionary"]));
  KF_TRY(auto cur, s->one([](Stmt& r) { return std::make_pair(r.int64(0), r.text(1)); }));
  if (!cur) return Out();
  auto& m = cdicts();
  auto it = m.find(cur->second);
  if (it == m.end()) {
    KF_TRY(std::string bytes, text_by_id(db, cur->first));
    ZSTD_CDict* d = ZSTD_createCDict(bytes.data(), bytes.size(), kZstdLevel);
    if (d == nullptr)
      return fail("store", db.path() + ": text " + std::to_string(cur->first) +
                               ": cannot be used as a zstd dictionary");
    it = m.emplace(cur->second, d).first;
  }
  return Out(std::make_pair(cur->first, it->second.get()));
}

}  // namespace

PackedText pack_text(std::string_view text) {
  if (text.size() < kCompressFrom) return {"plain", std::string(text)};
  std::string out(ZSTD_compressBound(text.size()), '\0');
  std::size_t n =
      ZSTD_compressCCtx(cctx(), out.data(), out.size(), text.data(), text.size(), kZstdLevel);
  if (ZSTD_isError(n) != 0u) return {"plain", std::string(text)};
  out.resize(n);
  return {"zstd", std::move(out)};
}

Result<std::string> unpack_text(std::string_view codec, std::string_view body, std::size_t size,
                                std::string_view where) {
  if (codec == "plain") {
    if (body.size() != size)
      return fail("store", std::string(where) + ": stored size " + std::to_string(size) +
                               " but the text has " + std::to_string(body.size()) + " bytes");
    return std::string(body);
  }
  if (codec != "zstd")
    return fail("store", std::string(where) + ": unknown codec '" + std::string(codec) + "'");
  std::string out(size, '\0');
  std::size_t n = ZSTD_decompressDCtx(dctx(), out.data(), out.size(), body.data(), body.size());
  if (ZSTD_isError(n) != 0u)
    return fail("store",
                std::string(where) + ": zstd body does not decode: " + ZSTD_getErrorName(n));
  if (n != size)
    return fail("store", std::string(where) + ": zstd body decodes to " + std::to_string(n) +
                             " bytes, stored size " + std::to_string(size));
  return out;
}

namespace {

// use_dict: compress against the current dictionary (not for a dictionary itself).
Result<std::int64_t> put(Db& db, std::string_view text, bool use_dict) {
  Sha256 h;
  h.update(text);
  auto d = h.digest();
  std::string_view sha(reinterpret_cast<const char*>(d.data()), d.size());
  auto find = [&]() -> Result<std::optional<std::int64_t>> {
    KF_TRY(Stmt * s, db.cached(store_queries()["text_id_by_sha"]));
    s->bind_blob(1, sha);
    return s->one([](Stmt& r) { return r.int64(0); });
  };
  KF_TRY(auto found, find());
  if (found) return *found;
  std::optional<std::pair<std::int64_t, const ZSTD_CDict*>> dict;
  if (use_dict && text.size() >= kCompressFrom) {
    KF_TRY(dict, current_cdict(db));
  }
  PackedText p;
  if (dict) {
    p.codec = "zstd";
    p.body.resize(ZSTD_compressBound(text.size()));
    std::size_t n = ZSTD_compress_usingCDict(cctx(), p.body.data(), p.body.size(), text.data(),
                                             text.size(), dict->second);
    if (ZSTD_isError(n) != 0u) return fail("store", db.path() + ": zstd: " + ZSTD_getErrorName(n));
    p.body.resize(n);
  } else {
    p = pack_text(text);
  }
  KF_TRY(Stmt * ins, db.cached(store_queries()["insert_text"]));
  ins->bind_blob(1, sha).bind(2, static_cast<std::int64_t>(text.size())).bind(3, p.codec);
  if (dict)
    ins->bind(4, dict->first);
  else
    ins->bind(4, nullptr);
  if (p.codec == "plain")
    ins->bind(5, std::string_view(p.body));
  else
    ins->bind_blob(5, p.body);
  KF_CHECK(ins->run());
  if (db.changes() == 1) return db.last_insert_rowid();
  KF_TRY(auto again, find());  // stored by another connection between the two statements
  if (again) return *again;
  return fail("store", db.path() + ": text " + h.hex_digest() + " was neither stored nor found");
}

}  // namespace

Result<std::int64_t> put_text(Db& db, std::string_view text) {
  return put(db, text, /*use_dict=*/true);
}

Status use_dictionary(Db& db, std::string_view bytes, std::int64_t now_ms) {
  KF_TRY(std::int64_t id, put(db, bytes, /*use_dict=*/false));
  KF_TRY(Stmt * s, db.cached(store_queries()["use_dictionary"]));
  s->bind(1, id).bind(2, now_ms);
  return s->run();
}

Result<std::string> get_text(Db& db, std::int64_t id) {
  return text_by_id(db, id);
}

namespace {
Result<std::string> text_by_id(Db& db, std::int64_t id) {
  const std::string where = db.path() + ": text " + std::to_string(id);
  KF_TRY(Stmt * s, db.cached(store_queries()["text_by_id"]));
  s->bind(1, id);
  KF_TRY(bool row, s->step());
  if (!row) {
    s->reset();
    return fail("store", where + ": missing from the texts table");
  }
  std::string codec = s->text(0);
  auto size = static_cast<std::size_t>(s->int64(1));
  std::string body = s->text(2);
  std::optional<std::int64_t> dict_id = s->opt_int64(3);
  std::string dict_sha = s->text(4);
  s->reset();
  if (!dict_id) return unpack_text(codec, body, size, where);
  if (codec != "zstd") return fail("store", where + ": a dictionary with codec '" + codec + "'");
  KF_TRY(const ZSTD_DDict* d, ddict(db, *dict_id, dict_sha));
  std::string out(size, '\0');
  std::size_t n =
      ZSTD_decompress_usingDDict(dctx(), out.data(), out.size(), body.data(), body.size(), d);
  if (ZSTD_isError(n) != 0u)
    return fail("store", where + ": zstd body does not decode with dictionary text " +
                             std::to_string(*dict_id) + ": " + ZSTD_getErrorName(n));
  if (n != size)
    return fail("store", where + ": zstd body decodes to " + std::to_string(n) +
                             " bytes, stored size " + std::to_string(size));
  return out;
}
}  // namespace

namespace {

void result_error(sqlite3_context* ctx, const Error& e) {
  sqlite3_result_error(ctx, e.message.c_str(), static_cast<int>(e.message.size()));
  if (e.transient == Transient::yes) sqlite3_result_error_code(ctx, SQLITE_BUSY);
}

void kf_text(sqlite3_context* ctx, int /*argc*/, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return sqlite3_result_null(ctx);
  auto* db = static_cast<Db*>(sqlite3_user_data(ctx));
  auto t = get_text(*db, sqlite3_value_int64(argv[0]));
  if (!t.ok()) return result_error(ctx, t.error());
  sqlite3_result_text64(ctx, t->data(), t->size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

void kf_put(sqlite3_context* ctx, int /*argc*/, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return sqlite3_result_null(ctx);
  auto* db = static_cast<Db*>(sqlite3_user_data(ctx));
  const auto* p = sqlite3_value_text(argv[0]);
  std::string_view text(reinterpret_cast<const char*>(p),
                        static_cast<std::size_t>(sqlite3_value_bytes(argv[0])));
  auto id = put_text(*db, text);
  if (!id.ok()) return result_error(ctx, id.error());
  sqlite3_result_int64(ctx, *id);
}

}  // namespace

Status register_text_functions(Db& db) {
  // kf_put writes: only in statements of ours, never from a view or trigger of the schema.
  struct Fn {
    const char* name;
    void (*fn)(sqlite3_context*, int, sqlite3_value**);
    int flags;
  };
  for (const Fn& f : {Fn{"kf_text", &kf_text, SQLITE_UTF8},
                      Fn{"kf_put", &kf_put, SQLITE_UTF8 | SQLITE_DIRECTONLY}}) {
    const char* name = f.name;
    int rc = sqlite3_create_function_v2(db.raw(), name, 1, f.flags, &db, f.fn, nullptr, nullptr,
                                        nullptr);
    if (rc != SQLITE_OK)
      return fail("sqlite", db.path() + ": cannot register " + std::string(name) +
                                "(): " + sqlite3_errstr(rc));
  }
  return {};
}

}  // namespace kforge::store
