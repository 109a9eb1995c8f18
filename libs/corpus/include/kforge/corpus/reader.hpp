#pragma once
// Streaming readers for corpus files: a JSON list of objects, or JSON Lines.
//
// Neither reader holds more than one record in memory. Each record arrives with its 0-based
// index and the 1-based line where it starts. Errors name the file, the record and the line, and
// stop the read.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "kforge/core/result.hpp"

namespace kforge::corpus {

enum class Format { automatic, json, jsonl };

// "json" | "jsonl" | "auto"
Result<Format> parse_format(const std::string& s);

struct RecordPos {
  std::int64_t index = 0;  // 0-based record index in the file
  std::int64_t line = 0;   // 1-based line where the record starts
};

struct ReadProgress {
  std::uint64_t bytes_read = 0;
  std::uint64_t bytes_total = 0;
  std::int64_t records = 0;
};

// Called for each record (any JSON value; the caller checks it is an object). Returning an error
// stops the read with it.
using RecordFn = std::function<Status(nlohmann::ordered_json&& record, const RecordPos& pos)>;
using ProgressFn = std::function<void(const ReadProgress&)>;

// Reads `file` record by record. With Format::automatic the first non-blank byte decides:
// '[' a JSON list, '{' JSON Lines. The path "-" reads standard input (named "stdin" in
// messages). Returns the number of records read.
Result<std::int64_t> read_records(const std::filesystem::path& file, Format format,
                                  const RecordFn& on_record, const ProgressFn& on_progress = {});

}  // namespace kforge::corpus
