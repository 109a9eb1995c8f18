// kforge-bench-llm: throughput, client overhead and achieved concurrency of kforge::llm::Client
// against kforge-fake-llm (in this process, on loopback; both share the machine's cores).
//
//   1. throughput: N requests, zero server latency, max_in_flight slots, audit store on.
//   2. overhead: one request at a time through the client, and the same requests through a bare
//      blocking libcurl handle (the baseline); overhead = median(client) - median(bare).
//   3. busy: 64 slots against a 500 ms server; the server's in-flight count sampled every 10 ms,
//      averaged over the run, divided by 64.
//   4. rate-limited: against the fake server's limit_req-style limiter (20 requests/s, burst 5,
//      429 + Retry-After: 1), 64 slots, a backlog of requests always waiting: successful
//      requests/s and the share answered 429 after the first 5 s, for the client as built and
//      for the earlier behaviour (no pacing, no slow start, every 429's Retry-After holding back
//      every request) in the same run.
// The last line holds every figure as key=value pairs.

#include <curl/curl.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include <unistd.h>

#include "kforge/fake_llm/server.hpp"
#include "kforge/llm/client.hpp"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using kforge::llm::ChatRequest;
using kforge::llm::ChatResponse;
using kforge::llm::Client;
using kforge::llm::LlmConfig;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// CPU seconds used so far by this process's threads named `name`.
double thread_cpu_s(const std::string& name) {
  double total = 0;
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(t.path() / "comm");
    std::string n;
    std::getline(comm, n);
    if (n != name) continue;
    std::ifstream stat(t.path() / "stat");
    std::string line;
    std::getline(stat, line);
    auto close = line.rfind(')');
    std::istringstream rest(line.substr(close + 2));
    std::string field;
    double ticks = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i)
      if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
    total += ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  return total;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  return v[i];
}

ChatRequest make_request(const std::string& prefix, int i) {
  ChatRequest r;
  r.messages = {{"system", "You are a careful Triton engineer. Answer in JSON."},
                {"user", prefix + " request " + std::to_string(i) +
                             ": analyse this kernel.\n@triton.jit\ndef k(X, Z, BLOCK: "
                             "tl.constexpr):\n    pid = tl.program_id(0)\n"}};
  return r;
}

std::unique_ptr<Client> make_client(const LlmConfig& cfg, const std::string& db) {
  kforge::llm::ClientOptions o;
  o.db_path = db;
  auto c = Client::create(cfg, o);
  if (!c.ok()) {
    std::fprintf(stderr, "kforge-bench-llm: %s\n", c.error().message.c_str());
    std::exit(1);
  }
  return std::move(c).value();
}

// Runs n requests through c with everything submitted up front; returns the seconds taken.
double run_batch(Client& c, const std::string& prefix, int n, std::atomic<int>* failures,
                 std::atomic<int>* answered = nullptr) {
  std::promise<void> done;
  std::atomic<int> left{n};
  auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) {
    c.submit(make_request(prefix, i), [&](kforge::Result<ChatResponse> r) {
      if (!r.ok()) {
        if (failures->fetch_add(1) == 0)
          std::fprintf(stderr, "failure: %s\n", r.error().message.c_str());
      }
      if (answered != nullptr) ++*answered;
      if (--left == 0) done.set_value();
    });
  }
  done.get_future().wait();
  return ms_since(t0) / 1000.0;
}

struct Limited {
  double ok_per_s = 0;
  double refused = 0;  // share of requests answered 429
  double pace_per_s = 0;
};

// Keeps `backlog` requests waiting in c for `secs`; counts the server's answers after `warmup`.
Limited run_limited(kforge::fake_llm::FakeLlmServer& server, const LlmConfig& cfg, double secs,
                    double warmup, const std::string& prefix) {
  auto c = make_client(cfg, "");
  std::atomic<int> done{0};
  int next = 0;
  auto top_up = [&] {
    while (next - done < 256)
      c->submit(make_request(prefix, next++), [&](kforge::Result<ChatResponse>) { ++done; });
  };
  auto t0 = Clock::now();
  while (ms_since(t0) < warmup * 1000) {
    top_up();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  server.reset_stats();
  auto t1 = Clock::now();
  while (ms_since(t1) < (secs - warmup) * 1000) {
    top_up();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  json st = server.stats();
  double window = ms_since(t1) / 1000.0;
  double ok = st["by_status"].value("200", 0);
  double limited = st["by_status"].value("429", 0);
  Limited out;
  out.ok_per_s = ok / window;
  out.refused = ok + limited > 0 ? limited / (ok + limited) : 0;
  out.pace_per_s = c->stats().pace_per_s;
  c->shutdown(std::chrono::milliseconds(0));
  return out;
}

std::size_t sink(char*, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(size * n, '\0');
  return size * n;
}

// The baseline: n requests from 64 threads, each a blocking libcurl loop on its own kept-alive
// connection, with the client's request bodies.
void bare_threads(const std::string& url, const Client& c, int n, const std::string& prefix,
                  std::atomic<int>* failures) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 64; ++t) {
    threads.emplace_back([&, t] {
      CURL* e = curl_easy_init();
      curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
      std::string out;
      for (int i = t; i < n; i += 64) {
        std::string body = c.request_json(make_request(prefix, i));
        curl_easy_setopt(e, CURLOPT_URL, url.c_str());
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body.c_str());
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, &out);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        if (curl_easy_perform(e) != CURLE_OK) ++*failures;
      }
      curl_slist_free_all(headers);
      curl_easy_cleanup(e);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge-bench-llm: LLM client throughput, overhead and concurrency."};
  int requests = 20'000;
  int in_flight = 64;
  int overhead_samples = 2000;
  int busy_requests = 640;
  double busy_latency_ms = 500;
  bool store = true;
  double limited_secs = 30;
  bool only_limited = false;
  app.add_option("--limited-seconds", limited_secs,
                 "Length of each rate-limited run (the first 5 s are not counted)")
      ->capture_default_str();
  app.add_flag("--only-limited", only_limited, "Run only the rate-limited comparison");
  app.add_option("--requests", requests, "Requests for the throughput run")->capture_default_str();
  app.add_option("--in-flight", in_flight, "max_in_flight for the throughput run")
      ->capture_default_str();
  app.add_option("--overhead-samples", overhead_samples, "Sequential requests per overhead run")
      ->capture_default_str();
  app.add_option("--busy-requests", busy_requests, "Requests for the 64-slot run")
      ->capture_default_str();
  app.add_option("--busy-latency-ms", busy_latency_ms, "Server latency for the 64-slot run")
      ->capture_default_str();
  app.add_option("--store", store, "Write audit rows (true/false)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);

  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  auto tmp =
      std::filesystem::temp_directory_path() / ("kforge-bench-llm-" + std::to_string(::getpid()));
  std::filesystem::create_directories(tmp);
  std::string db = store ? (tmp / "bench.db").string() : "";

  auto server = kforge::fake_llm::FakeLlmServer::start(
      {{"defaults",
        {{"reply", R"({"analysis": {"core_function": "copy", "key_parameters": ["BLOCK"]}})"}}}});
  if (!server.ok()) {
    std::fprintf(stderr, "kforge-bench-llm: %s\n", server.error().message.c_str());
    return 1;
  }
  LlmConfig cfg;
  cfg.base_url = (*server)->base_url();
  cfg.model = "fake-model";
  cfg.api_key_env = "";
  cfg.max_in_flight = in_flight;
  cfg.request_timeout_ms = 30'000;
  std::atomic<int> failures{0};

  // 4 first (with --only-limited, alone): rate-limited, paced against the earlier behaviour.
  Limited paced, unpaced;
  {
    json limit = {{"limit", {{"rate", 20}, {"burst", 5}, {"retry_after", 1}}}};
    LlmConfig lc = cfg;
    lc.max_in_flight = 64;
    lc.max_attempts = 1000;
    lc.backoff_base_ms = 100;
    lc.backoff_max_ms = 2000;
    if (!(*server)->set_script(limit).ok()) return 1;
    paced = run_limited(**server, lc, limited_secs, 5, "paced");
    LlmConfig old = lc;
    old.pace = false;
    old.initial_in_flight = old.max_in_flight;
    old.retry_after_pause_ms = 0;
    std::this_thread::sleep_for(std::chrono::seconds(1));
    if (!(*server)->set_script(limit).ok()) return 1;
    unpaced = run_limited(**server, old, limited_secs, 5, "unpaced");
    std::printf(
        "rate-limited (20/s, burst 5, 64 slots, %.0f s, first 5 s not counted): paced %.1f ok/s, "
        "%.1f%% answered 429 (learned %.1f/s); earlier behaviour %.1f ok/s, %.1f%% answered "
        "429\n",
        limited_secs, paced.ok_per_s, 100 * paced.refused, paced.pace_per_s, unpaced.ok_per_s,
        100 * unpaced.refused);
    if (!(*server)
             ->set_script({{"defaults",
                            {{"reply", R"({"analysis": {"core_function": "copy", )"
                                       R"("key_parameters": ["BLOCK"]}})"}}}})
             .ok())
      return 1;
    if (only_limited) {
      std::printf(
          "limited_ok_per_s=%.1f limited_429_share=%.3f baseline_ok_per_s=%.1f "
          "baseline_429_share=%.3f loadavg_1m=%.2f cores=%u\n",
          paced.ok_per_s, paced.refused, unpaced.ok_per_s, unpaced.refused, load[0],
          std::thread::hardware_concurrency());
      (*server)->stop();
      std::error_code ec;
      std::filesystem::remove_all(tmp, ec);
      return 0;
    }
  }

  // 1. Throughput.
  double rps = 0;
  double client_cpu_us = 0;
  double store_cpu_us = 0;
  double bare_rps = 0;
  {
    auto c = make_client(cfg, db);
    run_batch(*c, "warmup", std::min(2000, requests / 10 + 1), &failures);
    double cpu0 = thread_cpu_s("kforge-llm");
    double db0 = thread_cpu_s("kforge-llm-db");
    double secs = run_batch(*c, "throughput", requests, &failures);
    rps = requests / secs;
    client_cpu_us = (thread_cpu_s("kforge-llm") - cpu0) * 1e6 / requests;
    store_cpu_us = (thread_cpu_s("kforge-llm-db") - db0) * 1e6 / requests;
    std::printf("client CPU per request: network thread %.1f us, store thread %.1f us\n",
                client_cpu_us, store_cpu_us);
    auto t0 = Clock::now();
    bare_threads(c->url(), *c, requests, "throughput-bare", &failures);
    bare_rps = requests / (ms_since(t0) / 1000.0);
    std::printf("baseline: 64 threads with blocking libcurl: %.0f requests/s\n", bare_rps);
    std::printf("throughput: %d requests, %d in flight, store %s: %.2f s, %.0f requests/s\n",
                requests, in_flight, store ? "on" : "off", secs, rps);
  }

  // 2. Overhead: the client one request at a time against a bare blocking libcurl handle.
  double client_p50 = 0, client_p90 = 0, bare_p50 = 0, bare_p90 = 0;
  {
    LlmConfig one = cfg;
    one.max_in_flight = 1;
    auto c = make_client(one, db);
    std::vector<double> client_ms, bare_ms;
    for (int i = 0; i < 200; ++i) (void)c->call(make_request("overhead-warmup", i));
    for (int i = 0; i < overhead_samples; ++i) {
      auto t0 = Clock::now();
      auto r = c->call(make_request("overhead", i));
      client_ms.push_back(ms_since(t0));
      if (!r.ok()) ++failures;
    }
    CURL* e = curl_easy_init();
    std::string url = c->url();
    curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
    std::string out;
    for (int i = 0; i < overhead_samples + 200; ++i) {
      std::string body = c->request_json(make_request("bare", i));
      out.clear();
      curl_easy_setopt(e, CURLOPT_URL, url.c_str());
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, body.c_str());
      curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
      curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
      curl_easy_setopt(e, CURLOPT_WRITEDATA, &out);
      auto t0 = Clock::now();
      CURLcode rc = curl_easy_perform(e);
      if (i >= 200) bare_ms.push_back(ms_since(t0));
      if (rc != CURLE_OK) ++failures;
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(e);
    client_p50 = percentile(client_ms, 0.5);
    client_p90 = percentile(client_ms, 0.9);
    bare_p50 = percentile(bare_ms, 0.5);
    bare_p90 = percentile(bare_ms, 0.9);
    std::printf("overhead: client p50 %.3f ms p90 %.3f ms; bare libcurl p50 %.3f ms p90 %.3f ms\n",
                client_p50, client_p90, bare_p50, bare_p90);
  }

  // 3. Achieved concurrency against a slow server: the client with 64 slots, then the baseline,
  // 64 threads each running a blocking libcurl loop (what the slots would be with no client
  // work at all on this machine).
  double busy = 0, busy_wall = 0, busy_bare = 0, ramp_s = 0, busy_after_ramp = 0;
  {
    if (!(*server)->set_script({{"defaults", {{"latency_ms", busy_latency_ms}}}}).ok()) return 1;
    // The server's in-flight count every 10 ms. Besides the average over the whole run, the
    // average after slow start's ramp (from the first sample with >= 95% of the slots busy)
    // until fewer than 64 requests are left to answer (the tail cannot fill the slots).
    std::atomic<int> answered{0};
    auto sampled = [&](const std::function<void()>& work, double* secs, double* ramp_out,
                       double* after_ramp) {
      std::atomic<bool> stop{false};
      std::vector<std::pair<double, int>> trace;  // (ms since start, in flight)
      std::vector<int> answered_at;
      auto t0 = Clock::now();
      std::thread sampler([&] {
        while (!stop) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          trace.emplace_back(ms_since(t0), (*server)->in_flight());
          answered_at.push_back(answered.load());
        }
      });
      answered = 0;
      work();
      *secs = ms_since(t0) / 1000.0;
      stop = true;
      sampler.join();
      double sum = 0, tail_sum = 0;
      long tail_n = 0;
      std::optional<double> ramp;
      for (std::size_t i = 0; i < trace.size(); ++i) {
        sum += trace[i].second;
        if (!ramp && trace[i].second >= 61) ramp = trace[i].first;
        if (ramp && answered_at[i] <= busy_requests - 64) {
          tail_sum += trace[i].second;
          ++tail_n;
        }
      }
      *ramp_out = ramp ? *ramp / 1000.0 : -1;
      *after_ramp = tail_n > 0 ? tail_sum / static_cast<double>(tail_n) / 64.0 : 0;
      return trace.empty() ? 0 : sum / static_cast<double>(trace.size()) / 64.0;
    };
    LlmConfig slots = cfg;
    slots.max_in_flight = 64;
    auto c = make_client(slots, db);
    double secs = 0;
    busy = sampled([&] { run_batch(*c, "busy", busy_requests, &failures, &answered); }, &secs,
                   &ramp_s, &busy_after_ramp);
    double ideal = busy_requests * busy_latency_ms / 64000.0;
    busy_wall = ideal / secs;
    std::printf(
        "concurrency: %d requests at %.0f ms, 64 slots: %.2f s (ideal %.2f s); server "
        "saw %.1f in flight on average (busy fraction %.3f); slow start's ramp to 61 busy "
        "slots %.2f s, busy fraction after it %.3f; %llu concurrency cuts\n",
        busy_requests, busy_latency_ms, secs, ideal, busy * 64, busy, ramp_s, busy_after_ramp,
        static_cast<unsigned long long>(c->stats().concurrency_cuts));
    std::string url = c->url();
    double bare_secs = 0, bare_ramp = 0, bare_after = 0;
    busy_bare = sampled([&] { bare_threads(url, *c, busy_requests, "busy-bare", &failures); },
                        &bare_secs, &bare_ramp, &bare_after);
    std::printf(
        "baseline: 64 threads with blocking libcurl: %.2f s; server saw %.1f in flight on "
        "average (busy fraction %.3f)\n",
        bare_secs, busy_bare * 64, busy_bare);
  }
  (*server)->stop();
  std::error_code ec;
  std::filesystem::remove_all(tmp, ec);
  std::printf(
      "requests_per_s=%.0f bare_threads_requests_per_s=%.0f overhead_p50_ms=%.3f "
      "client_p50_ms=%.3f bare_curl_p50_ms=%.3f "
      "client_p90_ms=%.3f bare_curl_p90_ms=%.3f busy_fraction=%.3f busy_wall_fraction=%.3f "
      "busy_fraction_bare_threads=%.3f ramp_s=%.2f busy_fraction_after_ramp=%.3f "
      "net_thread_cpu_us=%.1f store_thread_cpu_us=%.1f failures=%d store=%d loadavg_1m=%.2f "
      "cores=%u limited_ok_per_s=%.1f limited_429_share=%.3f baseline_ok_per_s=%.1f "
      "baseline_429_share=%.3f\n",
      rps, bare_rps, client_p50 - bare_p50, client_p50, bare_p50, client_p90, bare_p90, busy,
      busy_wall, busy_bare, ramp_s, busy_after_ramp, client_cpu_us, store_cpu_us, failures.load(),
      store ? 1 : 0, load[0], std::thread::hardware_concurrency(), paced.ok_per_s, paced.refused,
      unpaced.ok_per_s, unpaced.refused);
  return failures.load() == 0 ? 0 : 1;
}
