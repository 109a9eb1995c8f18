#pragma once
// Texts: the large texts of the LLM stages (requests, raw answers, parsed answers, reasoning),
// each distinct text stored once in the `texts` table (migrations/0015_texts.sql), addressed by
// the SHA-256 of its bytes and shared by every row that holds it (stage_outputs, llm_calls).
// A text of kCompressFrom bytes or more is stored compressed with zstd (against the registered
// dictionary, if any: use_dictionary); smaller ones plain. Rows
// refer to a text by its id (columns named *_text); texts are never deleted (nothing in kforge
// deletes a row that refers to one), so no reference counts are kept.
//
// Every connection opened by Db::open has two SQL functions for these, so that named queries
// keep reading and writing texts in SQL:
//   kf_text(id)   the text with that id, decompressed (NULL for NULL; an error naming the id
//                 for an id that is missing or whose body does not decode)
//   kf_put(text)  the id of text, stored if new (NULL for NULL); it writes, so only in a
//                 statement that may write (INSERT, UPDATE), in the caller's transaction
// and tools without them (the sqlite3 shell) can still find a text by its hash:
// `texts.sha256` is the SHA-256 of the text's bytes, whatever its codec.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kforge/core/result.hpp"
#include "kforge/store/db.hpp"

namespace kforge::store {

// Texts of this many bytes or more are compressed (zstd); smaller ones stay plain: below it the
// frame's overhead eats most of what zstd saves, and a plain text is readable in any SQLite tool.
inline constexpr std::size_t kCompressFrom = 256;

struct PackedText {
  std::string codec;  // 'plain' | 'zstd'
  std::string body;
};

// The stored form of text.
PackedText pack_text(std::string_view text);
// The text back from its stored form. Errors name `where` (e.g. "text 42").
Result<std::string> unpack_text(std::string_view codec, std::string_view body, std::size_t size,
                                std::string_view where);

// The id of text, stored if new. In the caller's transaction, or in its own when there is none.
Result<std::int64_t> put_text(Db& db, std::string_view text);
// The text with this id. Errors: "store" naming the id when it is missing or does not decode.
Result<std::string> get_text(Db& db, std::int64_t id);

// Makes `bytes` the dictionary that large texts stored from now on are compressed against (a
// zstd raw-content dictionary: text that recurs in them, e.g. prompt templates). It is stored as
// a text itself; each text keeps the id of the dictionary it used, so later changes never affect
// what is stored. Registering it again only marks it the latest.
Status use_dictionary(Db& db, std::string_view bytes, std::int64_t now_ms);

// Registers kf_text() and kf_put() on db's connection (Db::open does, before migrating).
Status register_text_functions(Db& db);

}  // namespace kforge::store
