#include "kforge/corpus/importer.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "kforge/core/names.hpp"

#include "kforge/core/sha256.hpp"
#include "kforge/store/samples.hpp"

namespace kforge::corpus {
namespace {

using ojson = nlohmann::ordered_json;

const char* type_name(const ojson& v) {
  switch (v.type()) {
    case ojson::value_t::null:
      return "null";
    case ojson::value_t::object:
      return "an object";
    case ojson::value_t::array:
      return "a list";
    case ojson::value_t::string:
      return "a string";
    case ojson::value_t::boolean:
      return "a boolean";
    case ojson::value_t::number_integer:
    case ojson::value_t::number_unsigned:
    case ojson::value_t::number_float:
      return "a number";
    default:
      return "an unsupported value";
  }
}

// The record's field names, comma-separated (the first 20).
std::string field_list(const ojson& rec) {
  std::string out;
  int n = 0;
  for (const auto& [name, value] : rec.items()) {
    if (++n > 20) return out + ", ...";
    out += (out.empty() ? "" : ", ") + name;
  }
  return out.empty() ? "(none)" : out;
}

std::string where(const RecordPos& pos) {
  return "record " + std::to_string(pos.index) + " (line " + std::to_string(pos.line) + ")";
}

Error field_error(const RecordPos& pos, const std::string& field, const std::string& role,
                  const std::string& msg) {
  std::string f = "field '" + field + "'";
  if (role != field) f += " (" + role + ")";
  return Error("input", where(pos) + ": " + f + ": " + msg);
}

// A field the user named (--map TARGET=FIELD, --key FIELD) that the record lacks: the nearest
// field the record has, and all of them, whatever the field's role (one rule for every name).
Error missing_field(const RecordPos& pos, const ojson& rec, const std::string& field,
                    const std::string& role, const std::string& why) {
  std::vector<std::string> names;
  for (const auto& [name, value] : rec.items()) names.push_back(name);
  auto near = nearest_names(field, names);
  return field_error(pos, field, role,
                     "missing (" + why + ")" +
                         (near.empty() ? "" : " (did you mean '" + near.front() + "'?)") +
                         "; the record's fields are: " + field_list(rec));
}

Result<std::optional<std::string>> optional_string(const ojson& rec, const RecordPos& pos,
                                                   const std::string& field,
                                                   const std::string& role) {
  auto it = rec.find(field);
  if (it == rec.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string())
    return field_error(pos, field, role, std::string("expected a string, got ") + type_name(*it));
  return std::optional<std::string>(it->get<std::string>());
}

}  // namespace

Result<std::vector<std::pair<std::string, std::string>>> parse_map_spec(
    const std::string& spec, const std::vector<std::string>& targets) {
  std::vector<std::pair<std::string, std::string>> given;
  std::size_t start = 0;
  while (start <= spec.size()) {
    auto comma = spec.find(',', start);
    std::string item =
        spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? spec.size() + 1 : comma + 1;
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      return fail("usage", "--map: '" + item + "' is not TARGET=FIELD");
    std::string target = item.substr(0, eq), field = item.substr(eq + 1);
    for (const auto& [t, f] : given)
      if (t == target)
        return fail("usage", "--map: target '" + target + "' is given twice (" + target + "=" + f +
                                 " and " + item + ")");
    if (std::find(targets.begin(), targets.end(), target) == targets.end()) {
      std::string expected;
      for (std::size_t i = 0; i < targets.size(); ++i)
        expected += (i == 0 ? "" : i + 1 == targets.size() ? " or " : ", ") + targets[i];
      auto near = nearest_names(target, targets);
      return fail("usage", "--map: unknown target '" + target + "'" +
                               (near.empty() ? "" : " (did you mean '" + near.front() + "'?)") +
                               "; the targets are " + expected);
    }
    given.emplace_back(target, field);
  }
  return given;
}

Result<FieldMap> parse_field_map(const std::string& spec, FieldMap base) {
  const std::vector<std::string> targets = {"code", "description_1", "description_2", "key"};
  KF_TRY(auto given, parse_map_spec(spec, targets));
  for (const auto& [target, field] : given) {
    if (target == "code")
      base.code = field;
    else if (target == "description_1")
      base.description_1 = field;
    else if (target == "description_2")
      base.description_2 = field;
    else
      base.key = field;
    base.given.push_back(target);
  }
  return base;
}

std::string derived_key(std::string_view code) {
  return "sha256:" + sha256_hex(code).substr(0, 16);
}

Result<ImportSummary> import_file(store::Db& db, const std::filesystem::path& file,
                                  const ImportOptions& opts, Clock& clock,
                                  const ProgressFn& progress) {
  ImportSummary sum;
  store::Samples samples(db);
  std::unordered_map<std::string, std::int64_t> seen;  // key -> record index
  const std::int64_t now = clock.wall_ms();
  const FieldMap& m = opts.map;
  const std::string source = file == "-"
                                 ? std::string("stdin")
                                 : std::filesystem::absolute(file).lexically_normal().string();

  auto is_given = [&](const char* target) {
    return std::find(m.given.begin(), m.given.end(), target) != m.given.end();
  };
  sum.coverage = {{"description_1", m.description_1, 0, is_given("description_1")},
                  {"description_2", m.description_2, 0, is_given("description_2")}};
  std::map<std::string, std::int64_t> fields_seen;  // every field name -> records carrying it

  KF_TRY(store::Transaction tx, store::Transaction::begin(db));
  auto on_record = [&](ojson&& rec, const RecordPos& pos) -> Status {
    if (!rec.is_object())
      return fail("input", where(pos) + ": expected an object, got " + type_name(rec));
    for (const auto& [name, value] : rec.items())
      if (fields_seen.size() < 1000 || fields_seen.count(name) != 0) ++fields_seen[name];
    for (auto& c : sum.coverage) {
      auto it = rec.find(c.field);
      if (it != rec.end() && !it->is_null()) ++c.present;
    }
    auto code_it = rec.find(m.code);
    if (code_it == rec.end())
      return missing_field(pos, rec, m.code, "code",
                           "every record needs the code: --map code=FIELD names it");
    if (!code_it->is_string())
      return field_error(pos, m.code, "code",
                         std::string("expected a string, got ") + type_name(*code_it));
    store::SampleRow row;
    row.code = code_it->get<std::string>();
    if (row.code.empty()) return field_error(pos, m.code, "code", "empty");
    KF_TRY(row.description_1, optional_string(rec, pos, m.description_1, "description_1"));
    KF_TRY(row.description_2, optional_string(rec, pos, m.description_2, "description_2"));
    if (m.key) {
      auto k = rec.find(*m.key);
      if (k == rec.end() || k->is_null())
        return missing_field(pos, rec, *m.key, "key", "--key names it as the record's key");
      if (k->is_string())
        row.key = k->get<std::string>();
      else if (k->is_number_integer())
        row.key = std::to_string(k->get<std::int64_t>());
      else
        return field_error(pos, *m.key, "key",
                           std::string("expected a string or an integer, got ") + type_name(*k));
      if (row.key.empty()) return field_error(pos, *m.key, "key", "empty");
    } else {
      row.key = derived_key(row.code);
    }
    auto [it, inserted] = seen.emplace(row.key, pos.index);
    if (!inserted)
      return fail("input", where(pos) + ": key '" + row.key + "' already used by record " +
                               std::to_string(it->second) +
                               (m.key ? "" : " (the same code; keys are hashes of the code)"));
    if (opts.warn_code_bytes > 0 &&
        static_cast<std::int64_t>(row.code.size()) > opts.warn_code_bytes) {
      ++sum.oversized;
      if (sum.oversized_records.size() < 20)
        sum.oversized_records.push_back(row.key + " (record " + std::to_string(pos.index) + ", " +
                                        std::to_string(row.code.size()) + " bytes)");
    }
    row.code_sha256 = sha256_hex(row.code);
    row.record_json = rec.dump(-1, ' ', false, ojson::error_handler_t::strict);
    row.source = source;
    row.source_index = pos.index;
    ++sum.records;

    KF_TRY(auto existing, samples.find(row.key));
    if (!existing) {
      KF_CHECK(samples.insert(row, now));
      ++sum.added;
    } else if (existing->record_json == row.record_json &&
               existing->code_sha256 == row.code_sha256 &&
               existing->description_1 == row.description_1 &&
               existing->description_2 == row.description_2) {
      ++sum.unchanged;
    } else {
      ++sum.changed;
      if (sum.changed_keys.size() < 20) sum.changed_keys.push_back(row.key);
      if (opts.update) {
        KF_CHECK(samples.update(row, now));
        ++sum.updated;
      }
    }
    return {};
  };
  auto r = read_records(file, opts.format, on_record, progress);
  if (!r.ok()) return std::move(r).error();  // the transaction rolls back
  for (const auto& c : sum.coverage) {
    if (!c.given || c.present > 0) continue;
    std::vector<std::pair<std::int64_t, std::string>> by_count;
    for (const auto& [name, n] : fields_seen) by_count.emplace_back(-n, name);
    std::sort(by_count.begin(), by_count.end());
    std::string list;
    for (std::size_t i = 0; i < by_count.size() && i < 20; ++i)
      list += (list.empty() ? "" : ", ") + by_count[i].second;
    if (by_count.size() > 20) list += ", ...";
    auto near = nearest_names(c.field, [&] {
      std::vector<std::string> names;
      for (const auto& b : by_count) names.push_back(b.second);
      return names;
    }());
    return fail("input", "--map " + c.target + "=" + c.field + ": no record has a field '" +
                             c.field + "'" +
                             (near.empty() ? "" : " (did you mean '" + near.front() + "'?)") +
                             "; the records' fields are: " + list);
  }
  if (opts.dry_run) return sum;  // likewise
  KF_CHECK(tx.commit());
  return sum;
}

}  // namespace kforge::corpus
