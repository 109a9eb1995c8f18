#include "kforge/llm/config.hpp"

#include <algorithm>
#include <cstdlib>

#include "kforge/core/enum_names.hpp"

namespace kforge::llm {
namespace {

// Optional sampling values are strings in YAML so that "" can mean "not sent".
template <class T>
void get_optional(ConfigNode& n, std::string_view key, std::optional<T>& out) {
  std::string s;
  if (out) {
    if constexpr (std::is_same_v<T, double>) {
      s = std::to_string(*out);
    } else {
      s = std::to_string(*out);
    }
  }
  std::string before = s;
  n.get(key, s);
  if (s == before) return;
  if (s.empty() || s == "none") {
    out.reset();
    return;
  }
  char* end = nullptr;
  if constexpr (std::is_same_v<T, double>) {
    double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size()) {
      n.invalid(key, "expected a number or \"\", got '" + s + "'");
      return;
    }
    out = v;
  } else {
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (end != s.c_str() + s.size()) {
      n.invalid(key, "expected an integer or \"\", got '" + s + "'");
      return;
    }
    out = static_cast<T>(v);
  }
}

}  // namespace

const char* to_string(Provider p) {
  return p == Provider::azure ? "azure" : "openai";
}

namespace {
constexpr EnumName<ResponseFormat> kResponseFormatNames[] = {
    {ResponseFormat::none, "none"},
    {ResponseFormat::json_object, "json_object"},
    {ResponseFormat::json_schema, "json_schema"}};
}  // namespace

const char* to_string(ResponseFormat f) {
  return name_of(kResponseFormatNames, f).data();  // the table's names are C string literals
}

namespace {

std::optional<Mode> parse_mode(const std::string& s) {
  if (s == "interactive") return Mode::interactive;
  if (s == "batch") return Mode::batch;
  return std::nullopt;
}

// "24h", "90m", "3600s": the completion window in ms; 0 when unreadable.
std::int64_t window_ms(const std::string& w) {
  if (w.size() < 2) return 0;
  std::int64_t unit = w.back() == 'h'   ? 3'600'000
                      : w.back() == 'm' ? 60'000
                      : w.back() == 's' ? 1'000
                                        : 0;
  std::string digits = w.substr(0, w.size() - 1);
  if (unit == 0 || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::stoll(digits) * unit;
}

void read_mode(ConfigNode& n, LlmConfig& out) {
  std::string mode = to_string(out.mode);
  n.get("mode", mode);
  if (auto m = parse_mode(mode)) {
    out.mode = *m;
  } else {
    n.invalid("mode", "'" + mode + "' is not one of interactive, batch");
  }
  std::map<std::string, std::string> modes;
  n.get("modes", modes);
  for (const auto& [model, m] : modes) {
    if (auto pm = parse_mode(m)) {
      out.modes[model] = *pm;
    } else {
      n.invalid("modes", "model '" + model + "': '" + m + "' is not one of interactive, batch");
    }
  }
  std::string fb = out.batch_fallback == BatchFallback::interactive ? "interactive" : "next_batch";
  n.get("batch_fallback", fb);
  if (fb == "interactive") {
    out.batch_fallback = BatchFallback::interactive;
  } else if (fb == "next_batch") {
    out.batch_fallback = BatchFallback::next_batch;
  } else {
    n.invalid("batch_fallback", "'" + fb + "' is not one of next_batch, interactive");
  }
  ConfigNode b = n.child("batch");
  b.get("accepted_windows", out.batch.accepted_windows);
  if (out.batch.accepted_windows.empty())
    b.invalid("accepted_windows", "expected at least one completion window, e.g. [24h]");
  b.get("completion_window", out.batch.completion_window);
  const auto& ok = out.batch.accepted_windows;
  if (std::find(ok.begin(), ok.end(), out.batch.completion_window) == ok.end()) {
    std::string all;
    for (const auto& w : ok) all += (all.empty() ? "" : ", ") + w;
    b.invalid("completion_window", "'" + out.batch.completion_window +
                                       "' is not a window the provider accepts (" + all +
                                       "; llm.batch.accepted_windows lists them). kforge's own "
                                       "deadline is llm.batch.deadline");
  }
  b.get("deadline", out.batch.deadline);
  out.batch.deadline_ms = window_ms(out.batch.deadline);
  if (out.batch.deadline_ms <= 0)
    b.invalid("deadline", "'" + out.batch.deadline + "' is not a duration like 24h, 90m or 600s");
  b.get("keep_files", out.batch.keep_files);
  b.get_at_least("lines_in_memory", out.batch.lines_in_memory, 1);
  b.get_at_least("max_lines", out.batch.max_lines, 1);
  b.get_at_least("max_bytes", out.batch.max_bytes, 1024);
  b.get_at_least("collect_ms", out.batch.collect_ms, 0);
  b.get_at_least("poll_ms", out.batch.poll_ms, 1);
  b.get_at_least("max_attempts", out.batch.max_attempts, 1);
}

}  // namespace

const char* to_string(Mode m) {
  return m == Mode::batch ? "batch" : "interactive";
}

void read_config(ConfigNode n, LlmConfig& out) {
  std::string provider = to_string(out.provider);
  n.get("provider", provider);
  if (provider == "openai") {
    out.provider = Provider::openai;
  } else if (provider == "azure") {
    out.provider = Provider::azure;
  } else {
    n.invalid("provider", "'" + provider + "' is not one of openai, azure");
  }
  n.get("base_url", out.base_url);
  if (out.base_url.rfind("http://", 0) != 0 && out.base_url.rfind("https://", 0) != 0)
    n.invalid("base_url", "'" + out.base_url + "' must start with http:// or https://");
  n.get("model", out.model);
  if (out.model.empty()) n.invalid("model", "must not be empty");
  n.get("azure_deployment", out.azure_deployment);
  n.get("azure_api_version", out.azure_api_version);
  n.get("api_key_env", out.api_key_env);
  n.get("extra_headers", out.extra_headers);

  get_optional(n, "temperature", out.temperature);
  get_optional(n, "top_p", out.top_p);
  get_optional(n, "max_tokens", out.max_tokens);
  get_optional(n, "seed", out.seed);
  n.get_at_least("truncated_max_tokens", out.truncated_max_tokens, 0);
  std::string rf = to_string(out.response_format);
  n.get("response_format", rf);
  if (auto f = value_of(kResponseFormatNames, rf))
    out.response_format = *f;
  else
    n.invalid("response_format", "'" + rf + "' is not one of " + names_of(kResponseFormatNames));

  read_mode(n, out);

  n.get_at_least("max_in_flight", out.max_in_flight, 1);
  n.get("min_in_flight", out.min_in_flight);
  if (out.min_in_flight < 1 || out.min_in_flight > out.max_in_flight)
    n.invalid("min_in_flight", "must be between 1 and max_in_flight");
  n.get_at_least("initial_in_flight", out.initial_in_flight, 1);
  n.get("pace", out.pace);
  n.get("pace_decrease", out.pace_decrease);
  if (out.pace_decrease <= 0 || out.pace_decrease >= 1)
    n.invalid("pace_decrease", "must be between 0 and 1 (exclusive)");
  n.get_at_least("retry_after_pause_ms", out.retry_after_pause_ms, 0);
  n.get_at_least("max_prompt_tokens", out.max_prompt_tokens, 0);
  n.get_at_least("requests_per_minute", out.requests_per_minute, 0);
  n.get_at_least("tokens_per_minute", out.tokens_per_minute, 0);
  n.get("adaptive", out.adaptive);
  n.get_above("latency_factor", out.latency_factor, 1);
  n.get("decrease_factor", out.decrease_factor);
  if (out.decrease_factor <= 0 || out.decrease_factor >= 1)
    n.invalid("decrease_factor", "must be between 0 and 1 (exclusive)");
  n.get_at_least("adaptive_cooldown_ms", out.adaptive_cooldown_ms, 0);

  n.get_at_least("max_attempts", out.max_attempts, 1);
  n.get_at_least("total_deadline_ms", out.total_deadline_ms, 1);
  n.get_at_least("backoff_base_ms", out.backoff_base_ms, 0);
  n.get("backoff_max_ms", out.backoff_max_ms);
  if (out.backoff_max_ms < out.backoff_base_ms)
    n.invalid("backoff_max_ms", "must be >= backoff_base_ms");
  n.get_at_least("retry_after_cap_ms", out.retry_after_cap_ms, 0);

  n.get_at_least("connect_timeout_ms", out.connect_timeout_ms, 1);
  n.get_at_least("request_timeout_ms", out.request_timeout_ms, 1);

  n.get("replay", out.replay);
  nlohmann::json prices;
  n.get_json("prices", prices);
  if (!prices.is_null()) {
    if (!prices.is_object()) {
      n.invalid("prices", "expected a mapping of model -> {prompt_per_mtok, completion_per_mtok}");
    } else {
      out.prices.clear();
      for (const auto& [model, p] : prices.items()) {
        Price price;
        bool ok = p.is_object();
        for (const auto& [k, v] : ok ? p.items() : nlohmann::json::object().items()) {
          if (!v.is_number() || v.get<double>() < 0) {
            ok = false;
          } else if (k == "prompt_per_mtok") {
            price.prompt_per_mtok = v.get<double>();
          } else if (k == "completion_per_mtok") {
            price.completion_per_mtok = v.get<double>();
          } else if (k == "cached_prompt_per_mtok") {
            price.cached_prompt_per_mtok = v.get<double>();
          } else if (k == "reasoning_per_mtok") {
            price.reasoning_per_mtok = v.get<double>();
          } else if (k == "batch_multiplier") {
            price.batch_multiplier = v.get<double>();
          } else {
            ok = false;
          }
        }
        if (!ok) {
          n.invalid("prices", "model '" + model +
                                  "': expected {prompt_per_mtok: N, completion_per_mtok: N} "
                                  "(optionally cached_prompt_per_mtok, reasoning_per_mtok, "
                                  "batch_multiplier) "
                                  "with numbers >= 0");
          continue;
        }
        out.prices[model] = price;
      }
    }
  }
}

double call_cost(const Price& p, std::int64_t prompt_tokens, std::int64_t completion_tokens,
                 std::int64_t cached_prompt_tokens, std::int64_t reasoning_tokens) {
  std::int64_t cached = std::clamp<std::int64_t>(cached_prompt_tokens, 0, prompt_tokens);
  std::int64_t reasoning = std::clamp<std::int64_t>(reasoning_tokens, 0, completion_tokens);
  double usd =
      static_cast<double>(prompt_tokens - cached) * p.prompt_per_mtok +
      static_cast<double>(cached) * p.cached_prompt_per_mtok.value_or(p.prompt_per_mtok) +
      static_cast<double>(completion_tokens - reasoning) * p.completion_per_mtok +
      static_cast<double>(reasoning) * p.reasoning_per_mtok.value_or(p.completion_per_mtok);
  return usd / 1e6;
}

}  // namespace kforge::llm
