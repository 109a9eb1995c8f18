// kforged's scoring endpoint (POST /v1/score) end to end: the real binary with its verifier pool
// on the CPU stand-in Triton, over HTTP on loopback. Ordered results, the verdict cache, a
// deadline shorter than the work, a kill -9 mid-batch and the client's retry, a full queue.

#include <gtest/gtest.h>
#include <httplib.h>
#include <poll.h>

#include <atomic>
#include <thread>

#include "daemon_util.hpp"

namespace kforge::pipeline::e2e {
namespace {

const char* kAddWrapper =
    "def add(x, y):\n    out = [0.0] * len(x)\n    n = len(x)\n"
    "    grid = lambda meta: (triton.cdiv(n, meta[\"BLOCK_SIZE\"]),)\n"
    "    add_kernel[grid](x, y, out, n, BLOCK_SIZE=64)\n    return out\n";

// A passing test of vector_add.py; `sleep_s` > 0 makes its first run in a module take that long
// (not the mutant reruns), `tag` makes the content (and so the cache key) differ.
std::string add_test(double sleep_s = 0, const std::string& tag = "") {
  std::string t = "_slept = []\n\n\ndef test_add():\n";
  if (sleep_s > 0)
    t += "    if not _slept:\n        import time\n        time.sleep(" + std::to_string(sleep_s) +
         ")\n        _slept.append(1)\n";
  t += "    # " + tag + "\n";
  t += "    for n in (1, 63, 64, 130):\n        x = [float(i) for i in range(n)]\n"
       "        y = [2.0 * i for i in range(n)]\n"
       "        assert add(x, y) == [3.0 * i for i in range(n)], \"wrong sum for n=%d\" % n\n";
  return t;
}

json add_item(const std::string& id, double sleep_s = 0, const std::string& tag = "") {
  json c = load_json(cpu_corpus());
  return {{"id", id},
          {"code", c[0]["output"]},
          {"kernel_wrapper", kAddWrapper},
          {"unitest_code", add_test(sleep_s, tag)}};
}

class ScoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    port_ = free_port();
    configure(4096);
    site_.import_corpus(cpu_corpus());
  }
  void configure(int max_queue, const std::string& listen = "", const std::string& extra = "",
                 std::int64_t grace_ms = 10'000) {
    Options o;
    o.grace_ms = grace_ms;
    o.verify = true;
    o.fake_triton = true;
    site_.write_config(o);
    std::string y = test::read_text(site_.config());
    y += "score:\n  listen: \"" + (listen.empty() ? "127.0.0.1:" + std::to_string(port_) : listen) +
         "\"\n  max_queue: " + std::to_string(max_queue) + "\n" + extra;
    test::write_text(site_.config(), y);
  }
  // Starts kforged and waits until the endpoint answers.
  std::unique_ptr<Proc> start() {
    auto d = site_.start_daemon();
    auto until = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < until) {
      httplib::Client c("127.0.0.1", port_);
      if (auto r = c.Get("/v1/queue"); r && r->status == 200) return d;
      std::this_thread::sleep_for(50ms);
    }
    ADD_FAILURE() << "the endpoint never answered:\n" << d->log();
    return d;
  }
  httplib::Result post(const json& body, int timeout_s = 120) {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(timeout_s, 0);
    return c.Post("/v1/score", body.dump(), "application/json");
  }
  // Sends a POST with `body` on a raw socket and returns it, unread (the caller closes it: a
  // trainer that goes away).
  int open_post(const json& body) {
    const std::string text = body.dump();
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    const std::string req =
        "POST /v1/score HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
        "application/json\r\nContent-Length: " +
        std::to_string(text.size()) + "\r\n\r\n" + text;
    EXPECT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
    return fd;
  }
  // How many times the verifier started a sample of the run `tag` (the pool's debug line).
  int starts(const Proc& d, const std::string& tag) {
    const std::string log = d.log();
    int n = 0;
    for (const auto& key : site_.rows("SELECT s.key FROM jobs j JOIN samples s ON s.id = "
                                      "j.sample_id JOIN runs r ON r.id = j.run_id WHERE r.tag = '" +
                                          tag + "'",
                                      1))
      for (auto at = log.find(key + " starts on slot"); at != std::string::npos;
           at = log.find(key + " starts on slot", at + 1))
        ++n;
    return n;
  }
  std::int64_t verifications() {
    return site_.scalar(
        "SELECT count(*) FROM verifications v JOIN samples s ON s.id = v.sample_id "
        "WHERE s.key LIKE 'score/%'");
  }

  Site site_{script("fake_llm_cpu.json")};
  int port_ = 0;
};

TEST_F(ScoreTest, ABatchIsAnsweredInOrderAndARepeatFromTheCache) {
  auto d = start();
  json corpus = load_json(cpu_corpus());
  json scale = {{"id", "scale"},
                {"code", corpus[2]["output"]},
                {"kernel_wrapper",
                 "def scale(x):\n    out = [0.0] * len(x)\n    n = len(x)\n"
                 "    grid = lambda meta: (triton.cdiv(n, meta[\"BLOCK_SIZE\"]),)\n"
                 "    scale_kernel[grid](x, out, n, BLOCK_SIZE=64)\n    return out\n"},
                {"unitest_code",
                 "def test_scale():\n    x = [1.0, 2.0, 3.0]\n"
                 "    assert scale(x) == [3.0, 6.0, 9.0], \"scale(x) != 3 * x\"\n"}};
  json by_key = add_item("by_key");
  by_key.erase("code");
  by_key["key"] = "vector_add.py";
  json broken = add_item("broken");
  broken["unitest_code"] = "def test_add(:\n    pass\n";
  json add = add_item("add");
  add["prompt"] = "Write a Triton add kernel's wrapper and test";
  // A deadline far above the work (seconds on the CPU stand-in), so a loaded host cannot turn a
  // verdict into `deadline`.
  json body = {{"items", {add, scale, by_key, broken}}, {"deadline_s", 600}, {"tag", "rl-step-1"}};
  auto r = post(body);
  ASSERT_TRUE(r) << d->log();
  ASSERT_EQ(r->status, 200) << r->body;
  json out = json::parse(r->body);
  ASSERT_EQ(out["results"].size(), 4u) << out.dump(2);
  std::vector<std::string> ids;
  for (const auto& x : out["results"]) ids.push_back(x["id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"add", "scale", "by_key", "broken"}));
  const auto& res = out["results"];
  EXPECT_EQ(res[0]["verdict"], "passed") << res[0].dump(2);
  EXPECT_EQ(res[1]["verdict"], "failed") << res[1].dump(2);
  EXPECT_EQ(res[2]["verdict"], "passed") << res[2].dump(2);
  EXPECT_NE(res[3]["verdict"], "passed") << res[3].dump(2);
  // triton_eval: +1 verified (no speed label on the CPU), 0 wrong, -0.2 did not run.
  EXPECT_EQ(res[0]["reward"], res[0]["reward_components"]["verified"].get<bool>() ? 1.0 : 0.0);
  EXPECT_EQ(res[1]["reward"], 0.0);
  EXPECT_EQ(res[3]["reward"], -0.2);
  EXPECT_NE(res[1]["feedback"].get<std::string>().find("scale(x) != 3 * x"), std::string::npos)
      << res[1]["feedback"];
  for (const auto& x : res) EXPECT_FALSE(x["cached"].get<bool>());
  const auto stored = verifications();
  EXPECT_EQ(stored, 4);
  // The rollouts are samples of the run the tag names.
  EXPECT_EQ(site_.scalar("SELECT count(*) FROM jobs j JOIN runs r ON r.id = j.run_id "
                         "WHERE r.tag = 'rl-step-1' AND r.pipeline = 'score'"),
            4);
  // ... which export writes, as kforge's records and as chat rows (the prompt given, or the code).
  const auto rows = site_.dir().path() / "sft.jsonl";
  auto ex = site_.kforge({"export", "rl-step-1", "--format", "sft", "--out", rows.string()});
  EXPECT_EQ(ex.exit_code, 0) << ex.err;
  EXPECT_NE(test::read_text(rows).find("Write a Triton add"), std::string::npos);

  const int started = starts(*d, "rl-step-1");
  auto again = post(body);
  ASSERT_TRUE(again);
  ASSERT_EQ(again->status, 200) << again->body;
  json out2 = json::parse(again->body);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(out2["results"][i]["cached"].get<bool>()) << out2["results"][i].dump(2);
    EXPECT_EQ(out2["results"][i]["verdict"], res[i]["verdict"]);
    EXPECT_EQ(out2["results"][i]["reward"], res[i]["reward"]);
  }
  EXPECT_EQ(verifications(), stored);                       // nothing ran again:
  EXPECT_EQ(starts(*d, "rl-step-1"), started) << d->log();  // the pool started none of them
  EXPECT_EQ(site_.scalar("SELECT count(*) FROM jobs j JOIN runs r ON r.id = j.run_id "
                         "WHERE r.tag = 'rl-step-1'"),
            4);  // and no job was queued for them

  // Another preset over the same verdicts, and a bad request naming its field.
  body["reward"] = "binary";
  json bin = json::parse(post(body)->body);
  EXPECT_EQ(bin["results"][1]["reward"], 0.0);
  auto bad = post({{"items", {{{"id", "x"}, {"code", "c"}, {"kernel_wrapper", "w"}}}}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("items[0].unitest_code"), std::string::npos) << bad->body;
}

// The items' tests sleep an hour and verifier.timeout_s is 600 s, so nothing but the deadline
// can end them while the client waits (its read timeout is 120 s): an answer at all is one that
// did not wait for the work, and every item in it must be `deadline` with a null reward. (The
// deadline-plus-5-s figure is measured on the GPU host, not bounded here on a loaded CI host.)
TEST_F(ScoreTest, ADeadlineShorterThanTheWorkReturnsNullRewardsOnTime) {
  std::string y = test::read_text(site_.config());
  y.replace(y.find("timeout_s: 30"), 13, "timeout_s: 600");
  test::write_text(site_.config(), y);
  auto d = start();
  json body = {{"items", {add_item("slow1", 3600, "d1"), add_item("slow2", 3600, "d2")}},
               {"deadline_s", 2}};
  auto r = post(body, 120);
  ASSERT_TRUE(r) << d->log();
  ASSERT_EQ(r->status, 200) << r->body;
  json out = json::parse(r->body);
  ASSERT_EQ(out["results"].size(), 2u) << r->body;
  EXPECT_EQ(out["results"][0]["id"], "slow1");
  for (const auto& x : out["results"]) {
    EXPECT_TRUE(x["reward"].is_null()) << x.dump(2);
    EXPECT_EQ(x["status"], "deadline") << x.dump(2);
  }
  // Their jobs were cancelled, not left running for nobody, and nothing of them was stored.
  EXPECT_EQ(site_.wait_for("SELECT count(*) FROM jobs j JOIN runs r ON r.id = j.run_id "
                           "WHERE r.pipeline = 'score' AND j.state = 'cancelled'",
                           2, 120s),
            2);
  EXPECT_EQ(verifications(), 0);
}

// The slow items' first run takes 20 s, so they are still running when kforged is killed however
// slowly the loaded host got the quick ones through; the deadline is far above the work.
TEST_F(ScoreTest, AKillNineMidBatchThenTheRetryGivesEveryResultOnce) {
  auto d = start();
  json body = {{"items",
                {add_item("q1", 0, "k1"), add_item("q2", 0, "k2"), add_item("s1", 20, "k3"),
                 add_item("s2", 20, "k4")}},
               {"deadline_s", 600},
               {"wait", false}};
  auto first = post(body);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 202) << first->body;
  const std::int64_t batch = json::parse(first->body)["batch"];
  // The quick ones are judged; the slow ones are running.
  ASSERT_GE(site_.wait_for("SELECT count(*) FROM verifications", 2, 120s), 2) << d->log();
  ASSERT_GE(site_.wait_for("SELECT count(*) FROM jobs WHERE state = 'verifying'", 1, 60s), 1);
  d->kill9();
  ASSERT_LT(verifications(), 4);
  auto d2 = start();
  body["wait"] = true;
  auto r = post(body);
  ASSERT_TRUE(r) << d2->log();
  ASSERT_EQ(r->status, 200) << r->body;
  json out = json::parse(r->body);
  ASSERT_EQ(out["results"].size(), 4u);
  for (const auto& x : out["results"]) EXPECT_EQ(x["verdict"], "passed") << x.dump(2);
  EXPECT_TRUE(out["results"][0]["cached"].get<bool>());
  EXPECT_TRUE(out["results"][1]["cached"].get<bool>());
  // Every item was verified exactly once, across both daemons.
  EXPECT_EQ(site_.rows("SELECT count(*) FROM verifications v JOIN samples s ON s.id = v.sample_id "
                       "WHERE s.key LIKE 'score/%' GROUP BY s.id",
                       1),
            (std::vector<std::string>{"1", "1", "1", "1"}));
  // The first batch, asked for by its id, ended too.
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(60, 0);
  auto g = c.Get(("/v1/score/" + std::to_string(batch) + "?wait_s=30").c_str());
  ASSERT_TRUE(g);
  ASSERT_EQ(g->status, 200) << g->body;
  EXPECT_TRUE(json::parse(g->body)["done"].get<bool>()) << g->body;
}

TEST_F(ScoreTest, AClientThatGoesAwayCancelsItsItems) {
  auto d = start();
  const std::string body = json{{"items", {add_item("gone", 30, "g1")}}, {"deadline_s", 60}}.dump();
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port_));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const std::string req =
      "POST /v1/score HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
      "application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
  ASSERT_GE(site_.wait_for("SELECT count(*) FROM jobs WHERE state = 'verifying'", 1, 60s), 1);
  ::close(fd);  // the trainer went away
  // Noticed within a second; not noticed, the item would end `judged` (a timeout verdict after
  // verifier.timeout_s, 30 s) or `deadline`, never `cancelled`, so the wait can be long.
  EXPECT_EQ(site_.wait_for("SELECT count(*) FROM score_items WHERE outcome = 'cancelled'", 1, 90s),
            1)
      << d->log();
  EXPECT_EQ(site_.scalar("SELECT count(*) FROM jobs WHERE state = 'cancelled'"), 1);
}

// The verifier's pool holds every item of a batch (two running on its two slots, four waiting
// for one) when the client goes away or the deadline passes: the waiting ones never start, the
// running ones are killed, nothing of them is stored, and the next batch is served rather than
// queued behind them. Their tests sleep an hour and verifier.timeout_s is 600 s, so nothing but
// the kill frees a slot within the next batch's 300 s deadline: its verdict (not `deadline`) is
// the proof, with no wall-clock bound a loaded host could break.
TEST_F(ScoreTest, AClientGoneOrADeadlinePassedStopsTheWorkThePoolHolds) {
  std::string y = test::read_text(site_.config());
  y.replace(y.find("timeout_s: 30"), 13, "timeout_s: 600");
  test::write_text(site_.config(), y);
  auto d = start();
  for (const bool disconnect : {true, false}) {
    const std::string tag = disconnect ? "gone" : "late";
    SCOPED_TRACE(tag);
    json items = json::array();
    for (int i = 0; i < 6; ++i)
      items.push_back(add_item(tag + std::to_string(i), 3600, tag + "-held" + std::to_string(i)));
    // The late batch's deadline leaves a loaded host time to lease all six and start two.
    json body = {{"items", items}, {"deadline_s", disconnect ? 300 : 30}, {"tag", tag}};
    int fd = open_post(body);
    const std::string held =
        "SELECT count(*) FROM jobs j JOIN runs r ON r.id = j.run_id "
        "WHERE r.tag = '" +
        tag + "' AND j.state = ";
    ASSERT_EQ(site_.wait_for(held + "'verifying'", 6, 30s), 6) << d->log();
    auto until = std::chrono::steady_clock::now() + 30s;
    while (starts(*d, tag) < 2 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(50ms);
    ASSERT_EQ(starts(*d, tag), 2) << d->log();  // the two slots; four wait in the pool
    if (disconnect) ::close(fd);                // the trainer went away
    EXPECT_EQ(site_.wait_for(held + "'cancelled'", 6, 120s), 6) << d->log();
    auto r = post({{"items", {add_item("next-" + tag, 0, "next-" + tag)}},
                   {"deadline_s", 300},
                   {"tag", "next-" + tag}});
    ASSERT_TRUE(r) << d->log();
    ASSERT_EQ(r->status, 200) << r->body;
    json out = json::parse(r->body);
    EXPECT_EQ(out["results"][0]["verdict"], "passed") << out.dump(2) << d->log();
    EXPECT_FALSE(out["results"][0]["reward"].is_null());
    EXPECT_EQ(starts(*d, tag), 2) << d->log();  // none of the four waiting ever started
    EXPECT_EQ(site_.scalar("SELECT count(*) FROM verifications v JOIN runs r ON r.id = v.run_id "
                           "WHERE r.tag = '" +
                           tag + "'"),
              0);
    EXPECT_EQ(
        site_.scalar("SELECT count(*) FROM score_items i JOIN score_batches b ON b.id = "
                     "i.batch_id JOIN runs r ON r.id = b.run_id WHERE r.tag = '" +
                     tag + "' AND i.outcome = '" + (disconnect ? "cancelled" : "deadline") + "'"),
        6);
    if (!disconnect) {
      timeval tv{120, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      char buf[65536];
      std::string answer;
      for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, n);
      EXPECT_NE(answer.find("\"reward\":null"), std::string::npos) << answer;
      ::close(fd);
    }
  }
  EXPECT_NE(d->log().find("stopping 6 samples whose jobs were cancelled"), std::string::npos)
      << d->log();
}

// kforged stopped (SIGTERM) and started again while a trainer's adapter waits on a batch: the
// stopping kforged answers what it has ("done": false) or cuts the answer, the adapter retries
// through the refused connections until the new kforged answers, and every item gets its real
// reward, verified once.
TEST_F(ScoreTest, TheAdapterRidesOutAKforgedRestartMidBatch) {
  configure(4096, "", "", 3000);  // a 3 s grace: the samples running at the stop are killed
  auto d = start();
  const auto file = site_.dir().path() / "items.json";
  // Their first run takes 15 s: still running when kforged stops (1 s in) and its 3 s grace ends.
  test::write_text(file,
                   json{add_item("r1", 15, "restart1"), add_item("r2", 15, "restart2")}.dump());
  test::ProcResult res;
  std::thread trainer([&] {
    res = test::run_process(
        {"/usr/bin/python3", "-c",
         "import json, sys; sys.path.insert(0, sys.argv[1]); import kforge_reward as kr; "
         "c = kr.KforgeReward(url=sys.argv[2], tag='restart', deadline_s=150); "
         "print(json.dumps(c.score(json.load(open(sys.argv[3])))))",
         (test::source_dir() / "python").string(), "http://127.0.0.1:" + std::to_string(port_),
         file.string()},
        {}, 240);
  });
  const bool running =
      site_.wait_for("SELECT count(*) FROM jobs WHERE state = 'verifying'", 2, 60s) >= 2;
  std::this_thread::sleep_for(1s);  // into their 15 s
  d->signal(SIGTERM);
  // While its verifier drains, the stopping kforged takes no new batch: 503, nothing written.
  std::optional<httplib::Result> refused;
  for (auto until = std::chrono::steady_clock::now() + 30s;
       !refused && std::chrono::steady_clock::now() < until;) {
    auto r =
        post({{"items", {add_item("during", 0, "during")}}, {"tag", "during"}, {"wait", false}}, 5);
    if (!r || r->status == 503)
      refused = std::move(r);
    else
      std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(refused && *refused) << "no 503 before the port closed";
  if (refused && *refused) {
    EXPECT_NE((*refused)->body.find("kforged is stopping"), std::string::npos) << (*refused)->body;
    EXPECT_FALSE((*refused)->get_header_value("Retry-After").empty());
  }
  EXPECT_EQ(d->wait(60s), 0) << d->log();
  const std::string restart_verifications =
      "SELECT count(*) FROM verifications v JOIN runs r ON r.id = v.run_id WHERE r.tag = "
      "'restart'";
  EXPECT_EQ(site_.scalar(restart_verifications), 0);
  std::this_thread::sleep_for(2s);  // the adapter meets a port that refuses connections
  auto d2 = start();
  trainer.join();
  ASSERT_TRUE(running) << d->log();
  ASSERT_EQ(res.exit_code, 0) << res.out << res.err << d2->log();
  json out = json::parse(res.out);
  ASSERT_EQ(out.size(), 2u) << res.out;
  for (const auto& x : out) {
    EXPECT_EQ(x["verdict"], "passed") << x.dump(2);
    EXPECT_FALSE(x["reward"].is_null()) << x.dump(2);
  }
  // The adapter asked again (a second batch) and each item was verified once, by the new kforged.
  EXPECT_GE(site_.scalar("SELECT count(*) FROM score_batches b JOIN runs r ON r.id = b.run_id "
                         "WHERE r.tag = 'restart'"),
            2);
  EXPECT_EQ(site_.rows("SELECT count(*) FROM verifications v JOIN runs r ON r.id = v.run_id "
                       "WHERE r.tag = 'restart' GROUP BY v.sample_id",
                       1),
            (std::vector<std::string>{"1", "1"}));
}

TEST_F(ScoreTest, AFullQueueAnswers429WithRetryAfter) {
  configure(2);
  auto d = start();
  auto first = post({{"items", {add_item("a", 20, "f1"), add_item("b", 20, "f2")}},
                     {"deadline_s", 60},
                     {"wait", false}});
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 202) << first->body;
  auto full = post({{"items", {add_item("c", 20, "f3")}}, {"wait", false}});
  ASSERT_TRUE(full);
  EXPECT_EQ(full->status, 429) << full->body;
  EXPECT_FALSE(full->get_header_value("Retry-After").empty());
  // Nothing of the refused request was written: the queue holds the first batch's two jobs.
  EXPECT_EQ(site_.scalar("SELECT count(*) FROM jobs j JOIN runs r ON r.id = j.run_id "
                         "WHERE r.pipeline = 'score'"),
            2);
  EXPECT_EQ(site_.scalar("SELECT count(*) FROM score_batches"), 1);
  httplib::Client c("127.0.0.1", port_);
  auto q = c.Get("/v1/queue");
  ASSERT_TRUE(q);
  json qj = json::parse(q->body);
  EXPECT_EQ(qj["depth"]["waiting"].get<int>() + qj["depth"]["running"].get<int>(), 2) << q->body;
}

// More requests waiting at once than the listener has threads for: each new one must still be
// answered by its own deadline (its items end with null rewards), not wait unread behind the
// others with no deadline running. Read behind them, it would be answered only once they end, 60 s
// after they were sent: so it must be answered while all 64 still wait (an order, not a time a
// loaded host could miss).
TEST_F(ScoreTest, ARequestBeyondSixtyFourWaitingOnesIsStillAnsweredByItsDeadline) {
  std::string y = test::read_text(site_.config());
  y.replace(y.find("timeout_s: 30"), 13, "timeout_s: 600");  // none is judged before 60 s
  test::write_text(site_.config(), y);
  auto d = start();
  std::vector<std::thread> waiting;
  // The requests' threads are joined however the test ends (an ASSERT returns early).
  struct Joiner {
    std::vector<std::thread>& t;
    ~Joiner() {
      for (auto& x : t)
        if (x.joinable()) x.join();
    }
  } joiner{waiting};
  std::atomic<int> answered{0};
  for (int i = 0; i < 64; ++i)
    waiting.emplace_back([&, i] {
      auto r =
          post({{"items", {add_item("w" + std::to_string(i), 120, "many" + std::to_string(i))}},
                {"deadline_s", 60}},
               180);
      if (r) ++answered;
    });
  ASSERT_GE(site_.wait_for("SELECT count(*) FROM score_items", 64, 120s), 64) << d->log();
  auto r = post({{"items", {add_item("late", 120, "late")}}, {"deadline_s", 1}}, 120);
  const int answered_before = answered.load();
  ASSERT_TRUE(r) << d->log();
  EXPECT_EQ(answered_before, 0);  // answered by its deadline, although 64 requests still wait
  if (r->status == 200) {
    json out = json::parse(r->body);
    EXPECT_TRUE(out["results"][0]["reward"].is_null()) << r->body;
  } else {
    EXPECT_EQ(r->status, 429) << r->body;  // or refused at once, with when to come back
    EXPECT_FALSE(r->get_header_value("Retry-After").empty());
  }
  for (auto& t : waiting) t.join();
  EXPECT_EQ(answered.load(), 64);
}

// Trainers connecting at once: the listener's backlog holds as many connections as its threads
// serve, so none waits for its kernel to retry a dropped SYN (after 1, 3, 7, ... 63 s; httplib's
// own backlog is 5). With kforged stopped (SIGSTOP) nothing is accepted, so only the connections
// the backlog holds complete their handshake.
TEST_F(ScoreTest, SixtyFourTrainersConnectingAtOnceAreAllHeard) {
  auto d = start();
  d->signal(SIGSTOP);
  std::vector<int> fds;
  for (int i = 0; i < 64; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    (void)::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);  // EINPROGRESS
    fds.push_back(fd);
  }
  std::vector<bool> connected(fds.size(), false);
  int established = 0;
  // kforged is stopped, so a backlog too short never completes the rest however long this waits:
  // the bound only ends the loop.
  for (auto until = std::chrono::steady_clock::now() + 10s;
       established < 64 && std::chrono::steady_clock::now() < until;) {
    std::vector<pollfd> p;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < fds.size(); ++i)
      if (!connected[i]) p.push_back({fds[i], POLLOUT, 0}), which.push_back(i);
    if (::poll(p.data(), p.size(), 100) <= 0) continue;
    for (std::size_t k = 0; k < p.size(); ++k) {
      int err = -1;
      socklen_t len = sizeof err;
      if (!(p[k].revents & POLLOUT) ||
          ::getsockopt(p[k].fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)
        continue;
      connected[which[k]] = true;
      ++established;
    }
  }
  d->signal(SIGCONT);
  for (int fd : fds) ::close(fd);
  EXPECT_EQ(established, 64) << "the rest wait for their SYN to be retried";
  httplib::Client c("127.0.0.1", port_);
  auto q = c.Get("/v1/queue");
  ASSERT_TRUE(q) << d->log();
  EXPECT_EQ(q->status, 200);
}

// score.max_requests bounds the requests waiting at once: one more is answered 429 with
// Retry-After at once (nothing of it written), and GET /v1/queue is still answered. "At once":
// while the first still waits (its 30 s deadline), not after it.
TEST_F(ScoreTest, MoreWaitingRequestsThanScoreMaxRequestsAnswer429AtOnce) {
  configure(4096, "", "  max_requests: 1\n");
  auto d = start();
  std::atomic<bool> first_answered{false};
  std::thread first([&] {
    auto r = post({{"items", {add_item("one", 120, "mr1")}}, {"deadline_s", 30}}, 120);
    EXPECT_TRUE(r && r->status == 200);
    first_answered = true;
  });
  struct Joiner {
    std::thread& t;
    ~Joiner() {
      if (t.joinable()) t.join();
    }
  } joiner{first};
  ASSERT_GE(site_.wait_for("SELECT count(*) FROM score_items", 1, 60s), 1) << d->log();
  auto r = post({{"items", {add_item("two", 0, "mr2")}}, {"deadline_s", 60}}, 60);
  EXPECT_FALSE(first_answered.load());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429) << r->body;
  EXPECT_FALSE(r->get_header_value("Retry-After").empty());
  EXPECT_NE(r->body.find("score.max_requests"), std::string::npos) << r->body;
  EXPECT_EQ(site_.scalar("SELECT count(*) FROM score_items"), 1);
  httplib::Client c("127.0.0.1", port_);
  auto q = c.Get("/v1/queue");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->status, 200);
  EXPECT_EQ(json::parse(q->body)["requests"]["waiting"], 1) << q->body;
}

TEST_F(ScoreTest, AnAddressOffLoopbackNeedsAToken) {
  configure(10, "0.0.0.0:" + std::to_string(port_));
  auto d = site_.start_daemon();
  EXPECT_EQ(d->wait(60s), 1);
  EXPECT_NE(d->log().find("score.token"), std::string::npos) << d->log();
}

// DNS rebinding against the endpoint on loopback: a page on attacker.example whose name resolves
// to 127.0.0.1 sends its own Host. Names that only look like loopback are refused before any
// work is queued, whatever token comes with them; loopback names are answered.
TEST_F(ScoreTest, OnLoopbackAHostileHostIsRefusedBeforeAnyWork) {
  auto d = start();
  const std::string port = std::to_string(port_);
  const std::string body = json{{"items", {add_item("h", 0, "hostile")}}}.dump();
  httplib::Client c("127.0.0.1", port_);
  for (const std::string& hostile : std::vector<std::string>{
           "attacker.example:" + port, "127.attacker.example", "127.attacker.example:" + port,
           "localhost.evil", "localhost.evil:" + port, "127.0.0.1.nip.io:" + port,
           "127.0.0.1:" + port + "@attacker.example", "[::1].attacker.example", "127.1",
           "0177.0.0.1", std::string()}) {
    SCOPED_TRACE(hostile);
    httplib::Headers h = {{"Host", hostile}, {"Authorization", "Bearer any-token-at-all-0123"}};
    auto r = c.Post("/v1/score", h, body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 403) << r->body;
    EXPECT_NE(r->body.find("loopback host only"), std::string::npos) << r->body;
    EXPECT_EQ(r->body.find("results"), std::string::npos) << r->body;
    for (const char* path : {"/v1/queue", "/v1/score/1"}) {
      auto g = c.Get(path, {{"Host", hostile}});
      ASSERT_TRUE(g) << path;
      EXPECT_EQ(g->status, 403) << path;
    }
  }
  EXPECT_EQ(site_.scalar("SELECT count(*) FROM score_items"), 0);
  EXPECT_EQ(verifications(), 0);
  for (const std::string& loopback :
       std::vector<std::string>{"localhost:" + port, "127.0.0.1:" + port, "localhost"}) {
    auto g = c.Get("/v1/queue", {{"Host", loopback}});
    ASSERT_TRUE(g) << loopback;
    EXPECT_EQ(g->status, 200) << loopback << g->body;
  }
}

// Off loopback the token guards the endpoint: a request without it, with another one, with a
// prefix of it or in another scheme is refused (whatever its Host) before any work is queued,
// and the token appears nowhere in the daemon's log or the answers.
TEST_F(ScoreTest, OffLoopbackOnlyItsTokenIsAnswered) {
  const std::string token = "s3cret-score-token-0123456789";
  configure(10, "0.0.0.0:" + std::to_string(port_));
  auto d = site_.start_daemon({"KFORGE_SCORE_TOKEN=" + token});
  httplib::Client c("127.0.0.1", port_);
  const httplib::Headers good = {{"Authorization", "Bearer " + token}};
  auto until = std::chrono::steady_clock::now() + 60s;
  bool up = false;
  while (!up && std::chrono::steady_clock::now() < until) {
    auto r = c.Get("/v1/queue", good);
    up = r && r->status == 200;
    if (!up) std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(up) << d->log();
  const std::string body = json{{"items", {add_item("t", 0, "token")}}}.dump();
  for (const std::string& auth : std::vector<std::string>{
           std::string(), "Bearer ", "Bearer wrong-token-0123456789abc",
           "Bearer " + token.substr(0, 16), "Bearer " + token + "x", "Basic " + token, token}) {
    SCOPED_TRACE(auth);
    for (const char* host : {"127.attacker.example", "localhost.evil", "score.example:443"}) {
      httplib::Headers h = {{"Host", host}};
      if (!auth.empty()) h.emplace("Authorization", auth);
      auto r = c.Post("/v1/score", h, body, "application/json");
      ASSERT_TRUE(r) << host;
      EXPECT_EQ(r->status, 401) << host << r->body;
      EXPECT_NE(r->body.find("needs its token"), std::string::npos) << r->body;
      EXPECT_EQ(r->body.find(token), std::string::npos) << r->body;
      auto g = c.Get("/v1/queue", h);
      ASSERT_TRUE(g) << host;
      EXPECT_EQ(g->status, 401) << host;
    }
  }
  EXPECT_EQ(site_.scalar("SELECT count(*) FROM score_items"), 0);
  // The token itself is answered, whatever Host the client sends off loopback.
  httplib::Headers h = good;
  h.emplace("Host", "score.example:443");
  auto q = c.Get("/v1/queue", h);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->status, 200) << q->body;
  EXPECT_EQ(d->log().find(token), std::string::npos) << d->log();
}

TEST_F(ScoreTest, TheTrainerAdaptersScoreThroughTheEndpoint) {
  auto d = start();
  const auto code = site_.dir().path() / "vector_add.py";
  test::write_text(code, load_json(cpu_corpus())[0]["output"].get<std::string>());
  auto r = test::run_process(
      {"/usr/bin/python3",
       (test::source_dir() / "tests" / "kforged" / "reward_adapters_test.py").string(),
       "http://127.0.0.1:" + std::to_string(port_), code.string()},
      {}, 240);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << d->log();
  EXPECT_NE(r.out.find("ok"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace kforge::pipeline::e2e
