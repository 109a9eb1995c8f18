#include "dataset_card.hpp"

#include <spdlog/fmt/fmt.h>
#include <yaml-cpp/yaml.h>

namespace kforge::report::detail {

namespace {

using ojson = nlohmann::ordered_json;

ojson dtype(const char* name, const char* type) {
  return {{"name", name}, {"dtype", type}};
}
ojson strings(const char* name) {
  return {{"name", name}, {"sequence", "string"}};
}
ojson structure(const char* name, ojson fields) {
  return {{"name", name}, {"struct", std::move(fields)}};
}
ojson list_of(const char* name, ojson fields) {
  return {{"name", name}, {"list", std::move(fields)}};
}

ojson message_fields(bool reasoning_field) {
  ojson f = ojson::array({dtype("role", "string"), dtype("content", "string")});
  if (reasoning_field) f.push_back(dtype("reasoning_content", "string"));
  return f;
}

ojson metadata_feature(RowShape shape) {
  ojson f = ojson::array(
      {dtype("key", "string"), dtype("run", "string"), dtype("pipeline", "string"),
       dtype("prompt_version", "string"),
       list_of("prompts", ojson::array({dtype("stage", "string"), dtype("version", "string"),
                                        dtype("sha256", "string")})),
       dtype("model", "string"), dtype("stage", "string"), dtype("repair_round", "int64"),
       dtype("verdict", "string"), strings("flags"), dtype("status", "string"),
       structure("mutation_score",
                 ojson::array({dtype("killed", "int64"), dtype("applicable", "int64")})),
       dtype("cost_usd", "float64"), dtype("prompt_tokens", "int64"),
       dtype("completion_tokens", "int64"),
       structure(
           "near_duplicate_of",
           ojson::array({dtype("in", "string"), dtype("file", "string"), dtype("key", "string"),
                         dtype("similarity", "float64"), dtype("exact", "bool")})),
       dtype("license", "string"), dtype("group", "string"), dtype("split", "string")});
  if (shape == RowShape::trajectory)
    f.push_back(list_of("rounds", ojson::array({dtype("round", "int64"), dtype("stage", "string"),
                                                dtype("verdict", "string"), strings("flags"),
                                                dtype("detail", "string")})));
  return structure("metadata", std::move(f));
}

void emit(YAML::Emitter& y, const ojson& j) {
  if (j.is_object()) {
    y << YAML::BeginMap;
    for (const auto& [k, v] : j.items()) {
      y << YAML::Key << k << YAML::Value;
      emit(y, v);
    }
    y << YAML::EndMap;
  } else if (j.is_array()) {
    y << YAML::BeginSeq;
    for (const auto& v : j) emit(y, v);
    y << YAML::EndSeq;
  } else if (j.is_string()) {
    y << YAML::DoubleQuoted << j.get<std::string>();
  } else if (j.is_boolean()) {
    y << j.get<bool>();
  } else if (j.is_number_integer()) {
    y << j.get<std::int64_t>();
  } else if (j.is_number()) {
    y << j.get<double>();
  } else {
    y << YAML::Null;
  }
}

// "1 sample", "2 samples".
std::string count(std::int64_t n, const char* what) {
  return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
}

std::string size_category(std::int64_t n) {
  if (n < 1'000) return "n<1K";
  if (n < 10'000) return "1K<n<10K";
  if (n < 100'000) return "10K<n<100K";
  if (n < 1'000'000) return "100K<n<1M";
  return "1M<n<10M";
}

const char* shape_words(RowShape s) {
  switch (s) {
    case RowShape::sft:
      return "chat SFT rows (`messages`: the request the model was sent, then its answer), read "
             "by TRL's SFTTrainer and axolotl's `chat_template` datasets";
    case RowShape::prompt_completion:
      return "conversational prompt-completion rows (`prompt`: the request the model was sent, "
             "`completion`: its answer), read by TRL";
    case RowShape::trajectory:
      return "multi-turn repair trajectories (`messages`: every round of a sample, each "
             "request as the model was sent it, with the verifier's evidence on the previous "
             "answer in each repair request, ending in the final answer)";
    case RowShape::rl:
      return "verl RL rows (`prompt` as a chat list, `reward_model.ground_truth` with the "
             "verified test and the entry points)";
    case RowShape::record:
      break;
  }
  return "kforge's records: each corpus record with every field, then what the run made of it";
}

// What each field of a row holds, in words.
std::string fields_section(const ExportOptions& opts) {
  std::string md = "## Fields\n\n";
  bool field = opts.with_reasoning && opts.reasoning_style == ReasoningStyle::reasoning_content;
  std::string answer =
      "the model's answer, one JSON object in the prompt's output format (`kernel_wrapper`, "
      "`unitest_code`; the analysis for v2's first stage)";
  if (opts.with_reasoning)
    answer += field ? ", its reasoning in `reasoning_content`"
                    : ", after its reasoning in a `<think>` block";
  switch (opts.shape) {
    case RowShape::sft:
      md +=
          "- `messages`: the request's messages as the model was sent them, then " + answer + "\n";
      break;
    case RowShape::prompt_completion:
      md += "- `prompt`: the request's messages as the model was sent them\n- `completion`: " +
            answer + "\n";
      break;
    case RowShape::trajectory:
      md +=
          "- `messages`: every round: each request as the model was sent it (a repair "
          "request holds the verifier's evidence on the previous answer), each answer: " +
          answer + "\n";
      break;
    case RowShape::rl:
      md +=
          "- `data_source`: `kforge/` and the run; `ability`: `triton`\n"
          "- `prompt`: the generation request's user message\n"
          "- `reward_model`: `style` `rule`; `ground_truth`: the verified `unitest_code` and "
          "`kernel_wrapper`, `entry_points` (the `kernels` the test launched, its `tests`, the "
          "functions the `wrapper` defines), `speed` (the verifier's speed label as JSON, null "
          "where none was measured)\n"
          "- `extra_info`: `split`, `index` in the split, `key`, `code` (the kernel's source, "
          "which the test runs with the answer's wrapper)\n";
      break;
    case RowShape::record:
      md +=
          "Each corpus record with every field, then `kernel_wrapper`, `unitest_code`, "
          "`kernel_analysis` (v2), `verdict`, `flags`, `status`, `repair_round`, `model`, "
          "`prompt`, `mutation_score`, `coverage`, `cross_compile`, `speed` (the speed label: "
          "`kernel_us`, `gbps`, `fraction_of_peak`, `speedup` and `speedup_ci` over the PyTorch "
          "reference, `pass_perf`, `flags`; null where not timed) and, where it has one, "
          "`near_duplicate_of`.\n\n";
      return md;
  }
  md +=
      "- `metadata`: `key` (the sample), `run`, `pipeline`, `prompt_version` and `prompts` "
      "(each stage's prompt version and SHA-256), `model`, `stage` and `repair_round` (where the "
      "answer comes from: 0 is the first generation), `verdict`, `flags`, `status`, "
      "`mutation_score` (mutants of the kernel's outputs the test caught, of those that apply), "
      "`cost_usd` and tokens (every LLM call of the sample), `near_duplicate_of`, `license`, "
      "`group` (its near-duplicate group), `split`";
  if (opts.shape == RowShape::trajectory)
    md += ", `rounds` (each round's stage, verdict, flags and detail)";
  md += "\n\n";
  return md;
}

}  // namespace

ojson features(RowShape shape, bool reasoning_field) {
  ojson msg = message_fields(reasoning_field);
  switch (shape) {
    case RowShape::sft:
    case RowShape::trajectory:
      return ojson::array({list_of("messages", msg), metadata_feature(shape)});
    case RowShape::prompt_completion:
      return ojson::array(
          {list_of("prompt", msg), list_of("completion", msg), metadata_feature(shape)});
    case RowShape::rl:
      return ojson::array(
          {dtype("data_source", "string"), list_of("prompt", message_fields(false)),
           dtype("ability", "string"),
           structure(
               "reward_model",
               ojson::array({dtype("style", "string"),
                             structure("ground_truth",
                                       ojson::array({dtype("unitest_code", "string"),
                                                     dtype("kernel_wrapper", "string"),
                                                     structure("entry_points",
                                                               ojson::array({strings("kernels"),
                                                                             strings("tests"),
                                                                             strings("wrapper")})),
                                                     dtype("speed", "string")}))})),
           structure("extra_info", ojson::array({dtype("split", "string"), dtype("index", "int64"),
                                                 dtype("key", "string"), dtype("code", "string")})),
           metadata_feature(shape)});
    case RowShape::record:
      break;
  }
  return ojson::array();
}

// The card's YAML front matter: license, name, tags, size, the splits' files and sizes.
static std::string front_matter(const CardInput& in, std::int64_t total, std::int64_t bytes) {
  const RunInfo& run = *in.run;
  const ExportOptions& opts = *in.opts;
  const FolderSummary& sum = *in.sum;
  // The license: --license, else the one every record names, else "other" (several) or
  // "unknown" (none).
  std::string license = opts.license;
  if (license.empty()) {
    if (in.licenses.size() == 1 && in.without_license == 0)
      license = in.licenses.begin()->first;
    else
      license = in.licenses.empty() ? "unknown" : "other";
  }
  bool field = opts.with_reasoning && opts.reasoning_style == ReasoningStyle::reasoning_content;
  ojson front = {
      {"license", license},
      {"pretty_name", "kforge " + run.tag + " (" + run.pipeline + ", " + run.model + ")"},
      {"task_categories", ojson::array({"text-generation"})},
      {"language", ojson::array({"en"})},
      {"tags", ojson::array({"code", "triton", "gpu-kernels", "synthetic", "kforge",
                             std::string(to_string(opts.shape))})},
      {"size_categories", ojson::array({size_category(total)})}};
  ojson files = ojson::array();
  for (const auto& s : sum.splits)
    files.push_back({{"split", s.name}, {"path", "data/" + s.name + "-*.jsonl"}});
  front["configs"] = ojson::array({{{"config_name", "default"}, {"data_files", files}}});
  ojson info = ojson::object();
  ojson feats = features(opts.shape, field);
  if (!feats.empty()) info["features"] = std::move(feats);
  ojson splits = ojson::array();
  for (const auto& s : sum.splits)
    splits.push_back({{"name", s.name}, {"num_bytes", s.bytes}, {"num_examples", s.rows}});
  info["splits"] = std::move(splits);
  info["download_size"] = bytes;
  info["dataset_size"] = bytes;
  front["dataset_info"] = std::move(info);
  YAML::Emitter y;
  emit(y, front);

  return y.c_str();
}

// What the rows were checked against (--exclude-near) and what was found.
static std::string decontamination_section(const CardInput& in) {
  const ExportOptions& opts = *in.opts;
  const FolderSummary& sum = *in.sum;
  std::string md;
  md += "## Decontamination\n\n";
  if (in.eval_sets.empty()) {
    md += "No eval set was checked (`kforge export --exclude-near FILE...`).\n\n";
  } else {
    md += fmt::format(
        "Checked against these eval sets, kernel by kernel: a sample with a `@triton.jit` kernel "
        "that is the same as one of theirs up to renames, formatting and constants, or at "
        "similarity {:g} or more with one (identifiers normalised; kernels of fewer than {} "
        "tokens, such as small helpers, are not compared), or named alike with one (the same name "
        "and parameters, similarity 0.6 or more, the same operations), was {}.\n\n",
        opts.near_threshold,
        opts.exclude_near != nullptr ? opts.exclude_near->min_tokens() : dedup::kMinKernelTokens,
        opts.mark_near ? "kept and marked (metadata.near_duplicate_of)" : "left out");
    for (const auto& [file, n] : in.eval_sets)
      md += fmt::format("- `{}`: {}\n", file, count(n, "kernel"));
    md += fmt::format("\n{} {}", count(static_cast<std::int64_t>(sum.rows.near.size()), "sample"),
                      opts.mark_near ? "marked" : "removed");
    md += sum.rows.near.empty() ? ".\n\n" : ":\n\n";
    std::size_t shown = 0;
    for (const auto& n : sum.rows.near) {
      if (shown++ == 50) {
        md += fmt::format("- ... {} more\n", sum.rows.near.size() - 50);
        break;
      }
      md += fmt::format("- `{}`: kernel `{}` {} `{}` of `{}` in `{}`\n", n.key, n.match.kernel,
                        n.match.exact ? "is the same as"
                                      : fmt::format("similarity {:.2f}{} with", n.match.similarity,
                                                    n.match.named ? " and named alike" : ""),
                        n.match.eval_kernel, n.match.key, n.match.file);
    }
    md += "\n";
  }

  return md;
}

// The license given, or the records' licenses.
static std::string license_section(const CardInput& in) {
  const ExportOptions& opts = *in.opts;
  std::string md;
  md += "## License\n\n";
  if (!opts.license.empty())
    md += fmt::format("`{}`, as given to kforge export (--license).", opts.license);
  else if (in.licenses.empty())
    md += fmt::format(
        "Unknown: the corpus records have no `{}` field; the kernels keep their authors' "
        "licenses. Give one with `kforge export --license SPDX-ID`.",
        opts.license_field);
  else
    md += fmt::format("From the records' `{}` field (also `metadata.license` of each row):",
                      opts.license_field);
  md += "\n\n";
  if (opts.license.empty() && !in.licenses.empty()) {
    for (const auto& [l, n] : in.licenses) md += fmt::format("- `{}`: {}\n", l, count(n, "sample"));
    if (in.without_license > 0)
      md += fmt::format("- none given: {}\n", count(in.without_license, "sample"));
    md += "\n";
  }

  return md;
}

std::string render_card(const CardInput& in) {
  const RunInfo& run = *in.run;
  const ExportOptions& opts = *in.opts;
  const FolderSummary& sum = *in.sum;
  std::int64_t total = 0, bytes = 0;
  for (const auto& s : sum.splits) {
    total += s.rows;
    bytes += s.bytes;
  }
  std::string md = "---\n" + front_matter(in, total, bytes) + "\n---\n\n";
  md += std::string(kCardMarker) + "\n\n";
  md += fmt::format("# kforge {}\n\n", run.tag);
  md += fmt::format(
      "Triton GPU kernels from a crawled corpus, each with a Python wrapper and a unit test that "
      "an LLM wrote for it and a GPU verifier ran, made by kforge's run `{}` (pipeline {}, model "
      "`{}`). Rows: {}.\n\n",
      run.tag, run.pipeline, run.model, shape_words(opts.shape));
  md += count(total, "row");
  if (sum.rows.skipped > 0)
    md += fmt::format("; {} of the run left out by the verdict filter",
                      count(sum.rows.skipped, "sample"));
  if (sum.rows.not_compiling > 0) {
    std::string targets;
    for (const auto& t : opts.compiles_for) targets += (targets.empty() ? "" : ", ") + t;
    md += fmt::format("; {} left out as not compiling for {}", sum.rows.not_compiling, targets);
  }
  if (sum.rows.no_answer > 0)
    md += fmt::format("; {} selected samples had no answer to train on", sum.rows.no_answer);
  md += ".\n\n";

  md +=
      "## Splits\n\n| split | fraction | rows | bytes | shards | near-duplicate groups | their "
      "samples |\n|---|---|---|---|---|---|---|\n";
  for (const auto& s : sum.splits)
    md += fmt::format("| {} | {:g} | {} | {} | {} | {} | {} |\n", s.name, s.fraction, s.rows,
                      s.bytes, s.shards, s.groups, s.grouped);
  if (in.dedup_threshold)
    md += fmt::format(
        "\nEach sample goes to a split by a hash of its near-duplicate group (`kforge corpus "
        "dedup` at similarity {:g}: MinHash of the kernels' normalised tokens, the same kernels "
        "up to renames, files linked through their kernels, and no two samples whose kernels "
        "compute different operations on values; each group is built around a representative "
        "every member is near), so every group is wholly in one split: no near-duplicate of a "
        "training row is in another split. A sample keeps its split when the run grows; the counts "
        "are near the fractions, not exactly them.\n\n",
        *in.dedup_threshold);
  else
    md +=
        "\nEach sample goes to a split by a hash of its key. **No near-duplicate groups were "
        "known** (`kforge corpus dedup` was not run), so near-duplicates may fall in different "
        "splits.\n\n";

  md += fields_section(opts);
  md += "## How the samples were made and verified\n\n";
  md += fmt::format(
      "Pipeline {}: {}. A sample is **verified** when its test passed on the GPU and the "
      "verifier raised no quality flag: the test must also fail when the kernel's launches are "
      "skipped and when its outputs are changed by the verifier's output mutants. Each sample "
      "ran in its own sandboxed process with a deadline. The flags:\n\n",
      run.pipeline,
      run.has_analysis()
          ? "the model analysed the kernel from its code alone (a functional contract), then "
            "wrote the wrapper and test bound to that analysis"
          : "the model wrote the wrapper and test from the code and its descriptions");
  md +=
      "- `no_kernel_launch`: the test passed but no kernel of the code was launched\n"
      "- `mutant_survived`: the test still passed with every kernel launch skipped\n"
      "- `weak_test`: the test still passed with the kernel's outputs changed\n"
      "- `cross_compile_failed`: a required target's compiler failed on a launch\n"
      "- `environment`, `infrastructure`: the verifier could not judge the sample\n\n";
  if (run.repair_rounds() > 0)
    md += fmt::format(
        "Repair rounds: up to {}; a sample that was not verified went back to the model with the "
        "verifier's evidence. `metadata.repair_round` says which round the exported answer comes "
        "from.\n\n",
        run.repair_rounds());
  else
    md += "Repair rounds: none; every answer is the model's first.\n\n";
  // Which samples the rows hold.
  std::string kept;
  for (const auto& v : opts.verdicts) kept += (kept.empty() ? "" : ", ") + v;
  if (kept.empty())
    md += opts.shape == RowShape::record
              ? "Rows: every sample of the run, finished or not (`status` says which).\n\n"
              : "Rows: the verified samples only.\n\n";
  else
    md += fmt::format("Rows: the samples whose latest verdict is {}{}.\n\n", kept,
                      opts.include_flagged ? " (passed with a quality flag included)"
                                           : " (passed: verified only, no quality flag)");

  md += "## Prompts and model\n\n| stage | version | sha256 |\n|---|---|---|\n";
  if (run.prompts.is_object())
    for (const auto& [stage, p] : run.prompts.items())
      if (p.is_object())
        md += fmt::format("| {} | {} | `{}` |\n", stage, p.value("version", std::string()),
                          p.value("sha256", std::string()));
  md += fmt::format(
      "\nModel: `{}`. The prompts in the rows are the requests the model was sent, as stored.\n\n",
      run.model);

  md += "## Cost\n\n";
  if (opts.shape != RowShape::record)
    md += fmt::format("The exported rows' samples cost ${:.4f} in LLM calls. ", in.rows_cost_usd);
  md += fmt::format(
      "The whole run: ${:.4f} over {} stage outputs, {} prompt and {} completion tokens.\n\n",
      in.run_cost_usd, in.run_outputs, in.run_prompt_tokens, in.run_completion_tokens);

  md += decontamination_section(in);
  md += license_section(in);
  md += "## Loading\n\n```python\nfrom datasets import load_dataset\n\n";
  md += "ds = load_dataset(\"path/to/this/folder\")  # or the Hub repository it was pushed to\n";
  md += fmt::format("print(ds[\"{}\"][0])\n```\n",
                    sum.splits.empty() ? std::string("train") : sum.splits.front().name);
  return md;
}

}  // namespace kforge::report::detail
