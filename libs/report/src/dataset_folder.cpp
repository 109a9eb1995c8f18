// export_folder(): the splits, the shards, the card, and the swap into place.

#include <fcntl.h>
#include <spdlog/fmt/fmt.h>
#include <stdio.h>  // renameat2
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

#include "dataset_card.hpp"
#include "dataset_rows.hpp"
#include "kforge/core/enum_names.hpp"
#include "kforge/core/fs.hpp"
#include "kforge/core/sha256.hpp"
#include "kforge/dedup/groups.hpp"
#include "kforge/report/dataset.hpp"
#include "queries.hpp"

namespace kforge::report {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {
// The shapes --format names (record is kforge's own records, not a --format value).
constexpr EnumName<RowShape> kRowShapeNames[] = {{RowShape::sft, "sft"},
                                                 {RowShape::prompt_completion, "prompt-completion"},
                                                 {RowShape::trajectory, "trajectory"},
                                                 {RowShape::rl, "rl"},
                                                 {RowShape::record, "record"}};
}  // namespace

std::optional<RowShape> parse_row_shape(const std::string& s) {
  auto shape = value_of(kRowShapeNames, s);
  return shape == RowShape::record ? std::nullopt : shape;
}

const char* to_string(RowShape s) {
  return name_of(kRowShapeNames, s).data();  // the table's names are C string literals
}

Result<ReasoningStyle> parse_reasoning_style(const std::string& s) {
  if (s.empty() || s == "think") return ReasoningStyle::think;
  if (s == "reasoning_content") return ReasoningStyle::reasoning_content;
  return fail("usage", "--with-reasoning: '" + s +
                           "' is not think (a <think> block before the answer) or "
                           "reasoning_content (a field of the assistant's message)");
}

Result<std::vector<Split>> parse_splits(const std::string& spec) {
  std::vector<Split> out;
  std::set<std::string> names;
  double sum = 0;
  std::size_t at = 0;
  while (at <= spec.size()) {
    std::size_t comma = spec.find(',', at);
    std::string item = spec.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    at = comma == std::string::npos ? spec.size() + 1 : comma + 1;
    std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return fail("usage",
                  "--split: '" + item + "' is not NAME=FRACTION (e.g. train=0.9,test=0.1)");
    std::string name = item.substr(0, eq);
    for (char c : name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-')
        return fail("usage", "--split: the split name '" + name +
                                 "' may hold only letters, digits, '_' and '-'");
    if (!names.insert(name).second)
      return fail("usage", "--split: the split '" + name + "' is given twice");
    std::string value = item.substr(eq + 1);
    char* end = nullptr;
    double f = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(f) || f <= 0 ||
        f > 1)
      return fail("usage",
                  "--split: " + name + "='" + value + "' is not a fraction above 0 and at most 1");
    sum += f;
    out.push_back({name, f});
  }
  if (std::fabs(sum - 1) > 1e-6) {
    std::string list;
    for (const auto& s : out) list += (list.empty() ? "" : " + ") + fmt::format("{:g}", s.fraction);
    return fail("usage", fmt::format("--split: the fractions sum to {:g} ({}), not 1", sum, list));
  }
  return out;
}

std::size_t split_index(const std::vector<Split>& splits, const std::string& unit) {
  Sha256 h;
  h.update("kforge split\n");
  h.update(unit);
  auto d = h.digest();
  std::uint64_t x = 0;
  for (int i = 0; i < 8; ++i) x = (x << 8) | d[static_cast<std::size_t>(i)];
  double u = static_cast<double>(x >> 11) * 0x1.0p-53;
  double acc = 0;
  for (std::size_t i = 0; i < splits.size(); ++i) {
    acc += splits[i].fraction;
    if (u < acc) return i;
  }
  return splits.size() - 1;
}

namespace {

Status io_error(const fs::path& p, const std::string& what) {
  return fail("io", p.string() + ": " + what + ": " + std::strerror(errno));
}

// One split's shards: data/NAME-NNNNN.jsonl while writing, renamed -NNNNN-of-MMMMM at the end.
class SplitWriter {
 public:
  SplitWriter(fs::path data, std::string name, std::int64_t shard_rows)
      : data_(std::move(data)), name_(std::move(name)), shard_rows_(shard_rows) {}
  SplitWriter(SplitWriter&& o) noexcept
      : data_(std::move(o.data_)),
        name_(std::move(o.name_)),
        shard_rows_(o.shard_rows_),
        f_(o.f_),
        shards_(std::move(o.shards_)),
        in_shard_(o.in_shard_),
        rows_(o.rows_),
        bytes_(o.bytes_) {
    o.f_ = nullptr;
  }
  SplitWriter(const SplitWriter&) = delete;
  SplitWriter& operator=(const SplitWriter&) = delete;
  SplitWriter& operator=(SplitWriter&&) = delete;
  ~SplitWriter() {
    if (f_ != nullptr) std::fclose(f_);
  }

  Status write(const std::string& line) {
    if (f_ == nullptr || in_shard_ == shard_rows_) KF_CHECK(open_next());
    if (std::fwrite(line.data(), 1, line.size(), f_) != line.size() || std::fputc('\n', f_) == EOF)
      return io_error(shards_.back(), "cannot write");
    ++in_shard_;
    ++rows_;
    bytes_ += static_cast<std::int64_t>(line.size()) + 1;
    return {};
  }

  // Closes the last shard (an empty split gets one empty shard, so its data_files resolve) and
  // names every shard with their count.
  Status finish() {
    if (shards_.empty()) KF_CHECK(open_next());
    if (std::fclose(f_) != 0) {
      f_ = nullptr;
      return io_error(shards_.back(), "cannot write");
    }
    f_ = nullptr;
    for (std::size_t i = 0; i < shards_.size(); ++i) {
      fs::path to = data_ / fmt::format("{}-{:05d}-of-{:05d}.jsonl", name_, i, shards_.size());
      std::error_code ec;
      fs::rename(shards_[i], to, ec);
      if (ec) return fail("io", to.string() + ": " + ec.message());
    }
    return {};
  }

  std::int64_t rows() const { return rows_; }
  std::int64_t bytes() const { return bytes_; }
  std::int64_t shards() const { return static_cast<std::int64_t>(shards_.size()); }

 private:
  Status open_next() {
    if (f_ != nullptr && std::fclose(f_) != 0) {
      f_ = nullptr;
      return io_error(shards_.back(), "cannot write");
    }
    shards_.push_back(data_ / fmt::format("{}-{:05d}.jsonl", name_, shards_.size()));
    f_ = std::fopen(shards_.back().c_str(), "wb");
    if (f_ == nullptr) return io_error(shards_.back(), "cannot create");
    in_shard_ = 0;
    return {};
  }

  fs::path data_;
  std::string name_;
  std::int64_t shard_rows_;
  std::FILE* f_ = nullptr;
  std::vector<fs::path> shards_;
  std::int64_t in_shard_ = 0, rows_ = 0, bytes_ = 0;
};

// The folder being built beside the destination; removed unless it was swapped into place.
class Staging {
 public:
  ~Staging() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }

  // Checks the destination and makes the staging folder with data/ in it.
  Status create(const fs::path& dest) {
    std::error_code ec;
    if (fs::exists(dest, ec)) {
      if (!fs::is_directory(dest, ec))
        return fail("conflict", "--out-dir " + dest.string() + ": exists and is not a folder");
      bool empty = fs::is_empty(dest, ec);
      auto readme = read_file(dest / "README.md");
      if (!empty && (!readme.ok() || readme->find(detail::kCardMarker) == std::string::npos))
        return fail("conflict", "--out-dir " + dest.string() +
                                    ": exists and is not a kforge export folder (no README.md "
                                    "written by kforge export); choose another folder");
    }
    fs::path parent = dest.parent_path().empty() ? fs::path(".") : dest.parent_path();
    fs::create_directories(parent, ec);
    if (ec)
      return fail("io", "--out-dir " + dest.string() + ": cannot create " + parent.string() + ": " +
                            ec.message());
    fs::path tmp = parent / fmt::format(".{}.tmp-{}", dest.filename().string(), ::getpid());
    fs::remove_all(tmp, ec);
    if (::mkdir(tmp.c_str(), 0755) != 0)
      return fail("io", "--out-dir " + dest.string() + ": cannot create " + tmp.string() + ": " +
                            std::strerror(errno));
    path_ = tmp;
    if (::mkdir((tmp / "data").c_str(), 0755) != 0) return io_error(tmp / "data", "cannot create");
    return {};
  }

  // Puts the staging folder in dest's place in one step (the old folder, if any, is removed
  // after).
  Status swap_into(const fs::path& dest) {
    std::error_code ec;
    if (fs::exists(dest, ec)) {
      if (::renameat2(AT_FDCWD, path_.c_str(), AT_FDCWD, dest.c_str(), RENAME_EXCHANGE) != 0)
        return io_error(dest, "cannot replace");
      fs::remove_all(path_, ec);  // now the old export
      path_.clear();
      return {};
    }
    if (::rename(path_.c_str(), dest.c_str()) != 0) return io_error(dest, "cannot create");
    path_.clear();
    return {};
  }

  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

Result<FolderSummary> export_folder(store::Db& db, const std::string& tag, const fs::path& dir,
                                    const ExportOptions& opts) {
  std::vector<Split> splits = opts.splits.empty() ? std::vector<Split>{{"train", 1}} : opts.splits;
  if (opts.shard_rows < 1) return fail("usage", "--shard-rows: must be at least 1");
  fs::path dest = dir.lexically_normal();
  if (!dest.has_filename()) dest = dest.parent_path();
  KF_TRY(RunInfo run, find_run(db, tag));
  KF_TRY(auto rows, detail::RowMaker::create(db, run, opts));
  Staging staging;
  KF_CHECK(staging.create(dest));
  std::vector<SplitWriter> writers;
  for (const auto& s : splits)
    writers.emplace_back(staging.path() / "data", s.name, opts.shard_rows);
  std::vector<std::set<std::string>> groups(splits.size());
  std::vector<std::int64_t> grouped(splits.size(), 0);
  detail::CardInput card;
  FolderSummary out;
  bool record = opts.shape == RowShape::record;
  detail::Emit write = [&](detail::Selected& sel) -> Status {
    std::size_t i = split_index(splits, sel.group.value_or(sel.key));
    std::optional<ojson> row;
    if (record) {
      row = sel.rec;
    } else {
      KF_TRY(row, rows->make(sel, splits[i].name, writers[i].rows()));
      if (!row) {
        ++out.rows.no_answer;
        return {};
      }
      card.rows_cost_usd += (*row)["metadata"].value("cost_usd", 0.0);
    }
    auto lic = sel.rec.find(opts.license_field);
    if (lic != sel.rec.end() && lic->is_string() && !lic->get<std::string>().empty())
      ++card.licenses[lic->get<std::string>()];
    else
      ++card.without_license;
    if (sel.group) {
      groups[i].insert(*sel.group);
      ++grouped[i];
    }
    KF_CHECK(writers[i].write(row->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
    ++out.rows.written;
    return {};
  };
  KF_CHECK(detail::select_rows(db, run, opts, dest.string(), record, out.rows, write));
  for (std::size_t i = 0; i < splits.size(); ++i) {
    KF_CHECK(writers[i].finish());
    out.splits.push_back({splits[i].name, splits[i].fraction, writers[i].rows(), writers[i].bytes(),
                          writers[i].shards(), static_cast<std::int64_t>(groups[i].size()),
                          grouped[i]});
  }
  // The card: what the run is, from the database and what was written.
  KF_TRY(auto dedup_state, dedup::state(db));
  if (dedup_state) card.dedup_threshold = dedup_state->threshold;
  out.groups_known = dedup_state.has_value();
  if (opts.exclude_near != nullptr)
    for (const auto& [file, n] : opts.exclude_near->files())
      card.eval_sets.emplace_back(file, static_cast<std::int64_t>(n));
  KF_TRY(store::Stmt * cost, db.cached(queries()["dataset_run_cost"]));
  cost->bind(1, run.id);
  KF_CHECK(cost->each([&](store::Stmt& r) {
    card.run_cost_usd = r.real(0);
    card.run_prompt_tokens = r.int64(1);
    card.run_completion_tokens = r.int64(2);
    card.run_outputs = r.int64(3);
  }));
  card.run = &run;
  card.opts = &opts;
  card.sum = &out;
  KF_CHECK(write_file(staging.path() / "README.md", detail::render_card(card)));
  KF_CHECK(staging.swap_into(dest));
  out.readme = dest / "README.md";
  return out;
}

}  // namespace kforge::report
