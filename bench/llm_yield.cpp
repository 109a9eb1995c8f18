// kforge-bench-llm-yield: how many usable answers the LLM client takes out of the shapes real
// models answer in, and that it never takes the wrong code.
//
// Each shape is one way a model writes the answer to the v1 generate stage (a wrapper and a
// unit test): strict JSON, JSON in fences or prose, JSON with raw newlines, a Python dict with
// triple-quoted strings, labelled code blocks, a draft in a <think> block before the answer,
// reasoning in reasoning_content, an answer cut at max_tokens, ... kforge-fake-llm (in this
// process, on loopback) serves each shape for each sample; the client asks with the stage's
// schema (prompts/v1/generate.schema.json) and the answer it delivers is compared with the exact
// wrapper and test the shape was made from.
//
// Figures: recovered exactly / recoverable shapes, wrong code accepted (an answer delivered
// whose code is not the exact code: must be 0), HTTP calls per sample, and cut answers
// recovered by the retry with a larger max_tokens. The last line holds them as key=value pairs.
// --check exits 1 unless every recoverable shape is recovered exactly and no wrong code is
// accepted (the CI test).

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "kforge/fake_llm/server.hpp"
#include "kforge/llm/client.hpp"

namespace {

using nlohmann::json;

struct Sample {
  std::string wrapper;
  std::string test;
};

// Code with what breaks naive readers: quotes of both kinds, braces, backslashes, tabs.
const std::vector<Sample> kSamples = {
    {"import torch\nimport triton\n\ndef copy_transpose(x):\n    z = torch.empty((x.shape[1], "
     "x.shape[0]), device=x.device, dtype=x.dtype)\n    grid = lambda meta: "
     "(triton.cdiv(x.shape[0], meta['BLOCK_M']),)\n    kernel[grid](x, z, x.shape[0], "
     "x.shape[1], BLOCK_M=32)\n    return z\n",
     "import torch\n\ndef test_copy_transpose():\n    for shape in [(1, 1), (33, 17), (0, 4)]:\n"
     "        x = torch.randn(shape, device='cuda')\n        assert torch.allclose("
     "copy_transpose(x), x.T), f\"mismatch for {shape}\"\n"},
    {"import re\nimport torch\n\ndef parse_dims(spec):\n\t# tabs, a regex and a dict\n\tm = "
     "re.match(r\"(\\d+)x(\\d+)\", spec)\n\treturn {'rows': int(m.group(1)), 'cols': "
     "int(m.group(2))}\n\ndef add(a, b):\n    out = torch.empty_like(a)\n    add_kernel[(1,)]("
     "a, b, out, a.numel(), BLOCK=1024)\n    return out\n",
     "import torch\n\ndef test_add():\n    a = torch.randn(1000, device='cuda')\n    b = "
     "torch.randn(1000, device='cuda')\n    print(\"it's {} \\\\ ok\".format(1))\n    assert "
     "torch.allclose(add(a, b), a + b, atol=1e-6)\n"},
};

std::string json_str(const std::string& s) {
  return json(s).dump();
}

// Python's repr of a string: single quotes, \n \t \\ \' escaped.
std::string py_repr(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\'') {
      out += "\\'";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// A JSON string literal with the newlines and tabs left raw, as some models write it.
std::string raw_json_str(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string strict(const Sample& s) {
  return json{{"kernel_wrapper", s.wrapper}, {"unitest_code", s.test}}.dump(2);
}

// The same shape of answer with the code of a first, wrong attempt.
std::string draft_of(const Sample&) {
  return json{{"kernel_wrapper", "def copy(x):\n    return x.clone()  # draft\n"},
              {"unitest_code", "def test():\n    assert True\n"}}
      .dump();
}

struct Shape {
  std::string name;
  bool recoverable;
  bool cut;                                   // the first answer is cut at max_tokens
  std::function<json(const Sample&)> answer;  // the fake server's answer keys
};

json reply(const std::string& text) {
  return json{{"reply", text}};
}

std::vector<Shape> shapes() {
  std::vector<Shape> v;
  auto add = [&](std::string name, bool recoverable, std::function<json(const Sample&)> f,
                 bool cut = false) {
    v.push_back({std::move(name), recoverable, cut, std::move(f)});
  };
  add("strict_json", true, [](const Sample& s) { return reply(strict(s)); });
  add("fenced_json", true,
      [](const Sample& s) { return reply("```json\n" + strict(s) + "\n```"); });
  add("prose_then_json", true, [](const Sample& s) {
    return reply("Here is the wrapper and the test {as asked}:\n\n" + strict(s) +
                 "\n\nThe grid uses cdiv so sizes that are not a multiple of BLOCK work.");
  });
  add("raw_newlines", true, [](const Sample& s) {
    return reply("{\n  \"kernel_wrapper\": " + raw_json_str(s.wrapper) +
                 ",\n  \"unitest_code\": " + raw_json_str(s.test) + "\n}");
  });
  add("python_triple_quotes", true, [](const Sample& s) {
    auto esc = [](std::string t) {  // a backslash in a non-raw triple-quoted string escapes
      std::string o;
      for (char c : t) o += c == '\\' ? std::string("\\\\") : std::string(1, c);
      return o;
    };
    return reply("```python\n{\n    \"kernel_wrapper\": \"\"\"" + esc(s.wrapper) +
                 "\"\"\",\n    \"unitest_code\": \"\"\"" + esc(s.test) + "\"\"\"\n}\n```");
  });
  add("python_repr_dict", true, [](const Sample& s) {
    return reply("{'kernel_wrapper': " + py_repr(s.wrapper) +
                 ", 'unitest_code': " + py_repr(s.test) + "}");
  });
  add("trailing_comma", true, [](const Sample& s) {
    return reply("{\"kernel_wrapper\": " + json_str(s.wrapper) +
                 ",\n \"unitest_code\": " + json_str(s.test) + ",\n}");
  });
  add("bom", true, [](const Sample& s) { return reply("\xEF\xBB\xBF" + strict(s)); });
  add("extra_key", true, [](const Sample& s) {
    return reply(json{{"kernel_wrapper", s.wrapper},
                      {"unitest_code", s.test},
                      {"explanation", "The kernel copies X to Z transposed."}}
                     .dump());
  });
  add("fenced_values", true, [](const Sample& s) {
    return reply(json{{"kernel_wrapper", "```python\n" + s.wrapper + "```"},
                      {"unitest_code", "```python\n" + s.test + "```"}}
                     .dump());
  });
  add("content_parts", true, [](const Sample& s) {
    return json{{"reply", strict(s)}, {"content_parts", true}};
  });
  add("labelled_headings", true, [](const Sample& s) {
    return reply("## kernel_wrapper\n\n```python\n" + s.wrapper +
                 "```\n\n## unitest_code\n\n```python\n" + s.test + "```\n");
  });
  add("labelled_fence_info", true, [](const Sample& s) {
    return reply("```kernel_wrapper\n" + s.wrapper + "```\n```unitest_code\n" + s.test + "```");
  });
  add("string_encoded", true, [](const Sample& s) { return reply(json(strict(s)).dump()); });
  add("nested_in_wrapper", true, [](const Sample& s) {
    return reply(json{{"result", json::parse(strict(s))}}.dump());
  });
  add("draft_in_think", true, [](const Sample& s) {
    return reply("<think>\nA first try:\n" + draft_of(s) +
                 "\nNo: the output is transposed. Again.\n</think>\n\n```json\n" + strict(s) +
                 "\n```");
  });
  add("think_opened_by_template", true, [](const Sample& s) {
    return reply("Draft: " + draft_of(s) + "\nthat copies, wrong.\n</think>\n" + strict(s));
  });
  add("reasoning_content", true, [](const Sample& s) {
    return json{{"reply", strict(s)},
                {"reasoning", "Draft:\n" + draft_of(s) + "\nThe strides are wrong; fixing."},
                {"usage", {{"completion_tokens", 900}, {"reasoning_tokens", 600}}}};
  });
  add("draft_fence_then_answer", true, [](const Sample& s) {
    return reply("Sketch:\n```json\n{\"kernel_wrapper\": \"\"}\n```\nFinal:\n```json\n" +
                 strict(s) + "\n```");
  });
  add(
      "cut_at_max_tokens", true,
      [](const Sample& s) {
        return json{{"reply", strict(s)}, {"needs_max_tokens", 6000}};
      },
      true);
  add(
      "cut_in_reasoning", true,
      [](const Sample& s) {
        return json{{"reply", strict(s)},
                    {"reasoning", "Let me think about the strides at length..."},
                    {"needs_max_tokens", 6000}};
      },
      true);
  // Not recoverable: no usable answer in them; the client must not deliver code.
  add("refusal", false, [](const Sample&) {
    return reply("I'm sorry, I can't write code for this kernel without more context.");
  });
  add("answer_only_in_think", false,
      [](const Sample& s) { return reply("<think>\n" + strict(s) + "\n</think>\n"); });
  add("test_under_prose_mentioning_a_field", false, [](const Sample& s) {
    return reply("## kernel_wrapper\n```python\n" + s.wrapper +
                 "```\nAnd a test that calls kernel_wrapper:\n```python\n" + s.test + "```\n");
  });
  add("only_the_wrapper", false, [](const Sample& s) {
    return reply(json{{"kernel_wrapper", s.wrapper}}.dump());
  });
  add(
      "cut_beyond_the_limit", false,
      [](const Sample& s) {
        return json{{"reply", strict(s)}, {"needs_max_tokens", 1'000'000}};
      },
      true);
  return v;
}

std::string rstrip(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge-bench-llm-yield: usable answers taken out of real models' answer shapes."};
  std::string schema_path = std::string(KFORGE_SOURCE_DIR) + "/prompts/v1/generate.schema.json";
  bool check = false;
  bool verbose = false;
  app.add_option("--schema", schema_path, "The stage schema")->capture_default_str();
  app.add_flag("--check", check,
               "Exit 1 unless every recoverable shape is recovered exactly "
               "and no wrong code is accepted");
  app.add_flag("--verbose", verbose, "One line per shape and sample");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::err);

  std::ifstream in(schema_path);
  json schema = json::parse(in, nullptr, false);
  if (schema.is_discarded()) {
    std::fprintf(stderr, "kforge-bench-llm-yield: %s: not JSON\n", schema_path.c_str());
    return 1;
  }

  std::vector<Shape> all = shapes();
  json rules = json::array();
  for (const auto& sh : all) {
    for (std::size_t i = 0; i < kSamples.size(); ++i) {
      json r = sh.answer(kSamples[i]);
      r["name"] = sh.name;
      r["match"] = {{"contains", "shape=" + sh.name + " sample=" + std::to_string(i) + ";"}};
      rules.push_back(std::move(r));
    }
  }
  auto server = kforge::fake_llm::FakeLlmServer::start({{"rules", rules}});
  if (!server.ok()) {
    std::fprintf(stderr, "kforge-bench-llm-yield: %s\n", server.error().message.c_str());
    return 1;
  }
  kforge::llm::LlmConfig cfg;
  cfg.base_url = (*server)->base_url();
  cfg.model = "fake-model";
  cfg.api_key_env = "";
  cfg.max_tokens = 4096;
  cfg.truncated_max_tokens = 16384;
  cfg.max_in_flight = 8;
  cfg.backoff_base_ms = 1;
  cfg.backoff_max_ms = 10;
  auto client = kforge::llm::Client::create(cfg);
  if (!client.ok()) {
    std::fprintf(stderr, "kforge-bench-llm-yield: %s\n", client.error().message.c_str());
    return 1;
  }

  int recoverable = 0, recovered = 0, wrong = 0, cut = 0, cut_recoverable = 0, cut_recovered = 0;
  int samples = 0;
  std::map<std::string, int> mended;
  std::vector<std::string> missed;
  for (const auto& sh : all) {
    for (std::size_t i = 0; i < kSamples.size(); ++i) {
      ++samples;
      kforge::llm::ChatRequest req;
      req.messages = {{"system", "Answer with kernel_wrapper and unitest_code."},
                      {"user", "shape=" + sh.name + " sample=" + std::to_string(i) + ";"}};
      req.response_schema = schema;
      auto r = (*client)->call(req);
      bool exact = r.ok() &&
                   rstrip(r->parsed.value("kernel_wrapper", "")) == rstrip(kSamples[i].wrapper) &&
                   rstrip(r->parsed.value("unitest_code", "")) == rstrip(kSamples[i].test);
      if (r.ok() && !exact) ++wrong;
      if (sh.recoverable) {
        ++recoverable;
        if (exact) ++recovered;
        if (!exact) missed.push_back(sh.name + "#" + std::to_string(i));
      }
      if (sh.cut) {
        ++cut;
        if (sh.recoverable) ++cut_recoverable;
        if (exact) ++cut_recovered;
      }
      if (r.ok())
        for (const auto& m : r->mended) ++mended[m];
      if (verbose)
        std::printf("%-26s sample %zu: %s%s\n", sh.name.c_str(), i,
                    r.ok() ? (exact ? "recovered exactly" : "WRONG CODE ACCEPTED") : "refused: ",
                    r.ok() ? "" : r.error().message.substr(0, 160).c_str());
    }
  }
  auto st = (*client)->stats();
  double calls = static_cast<double>(st.http_attempts) / samples;
  std::printf("shapes: %zu, samples per shape: %zu\n", all.size(), kSamples.size());
  std::printf("recovered exactly: %d / %d recoverable\n", recovered, recoverable);
  std::printf("wrong code accepted: %d (of %d answers)\n", wrong, samples);
  std::printf("HTTP calls per sample: %.2f\n", calls);
  std::printf("cut answers recovered after the larger retry: %d / %d recoverable (%d cut)\n",
              cut_recovered, cut_recoverable, cut);
  std::string m;
  for (const auto& [k, n] : mended) m += (m.empty() ? "" : ",") + k + ":" + std::to_string(n);
  std::printf("mended: %s\n", m.empty() ? "none" : m.c_str());
  for (const auto& x : missed) std::printf("missed: %s\n", x.c_str());
  std::printf(
      "recovered=%d recoverable=%d wrong_accepted=%d calls_per_sample=%.2f cut=%d "
      "cut_recoverable=%d cut_recovered=%d enlarged=%llu samples=%d\n",
      recovered, recoverable, wrong, calls, cut, cut_recoverable, cut_recovered,
      static_cast<unsigned long long>(st.enlarged), samples);
  (*client)->shutdown(std::chrono::milliseconds(0));
  (*server)->stop();
  if (check && (recovered != recoverable || wrong != 0)) return 1;
  return 0;
}
