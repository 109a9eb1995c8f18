// kforge serve through a real HTTP client on 127.0.0.1: each page's status and content, the
// filters, the escaping of hostile text, the refusals (methods, hosts, tokens, addresses) and
// reading while another connection writes.

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "kforge/core/fs.hpp"
#include "kforge/report/escape.hpp"
#include "kforge/report/outcomes.hpp"
#include "kforge/report/viewer.hpp"
#include "viewer_util.hpp"

namespace kforge::test {
namespace {

bool has(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

// The sample keys of a samples page's table, in order.
std::vector<std::string> keys_of(const std::string& html) {
  static const std::regex row(R"re(<td class="key"><a href="[^"]*">([^<]*)</a>)re");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), row); it != std::sregex_iterator();
       ++it)
    out.push_back((*it)[1]);
  return out;
}

class Viewer : public ::testing::Test {
 protected:
  httplib::Result get(const std::string& path, const httplib::Headers& headers = {}) {
    httplib::Client c("127.0.0.1", server.port());
    return c.Get(path.c_str(), headers);
  }
  ViewerFixture vf;
  ServeProcess server{vf.config()};
};

TEST(ViewerEscape, EscapesTheFiveCharactersAndEncodesQueryValues) {
  EXPECT_EQ(report::html_escape(R"(</script><a href="x" title='y'>&)"),
            "&lt;/script&gt;&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;");
  EXPECT_EQ(report::url_encode("a b&c=d/\"'<é"), "a%20b%26c%3Dd%2F%22%27%3C%C3%A9");
  EXPECT_EQ(report::url_encode("Az09-._~"), "Az09-._~");
}

TEST(ViewerEscape, ShowsBidirectionalControlsAsMarkers) {
  // rtl_<U+202E>yp.exe_gnp.py reads rtl_yp.png_exe.py when the override is rendered.
  EXPECT_EQ(report::html_escape("rtl_\u202Eyp.exe_gnp.py"),
            "rtl_<span class=bidi title=U+202E>&#x27E6;U+202E&#x27E7;</span>yp.exe_gnp.py");
  for (const char* control :
       {"\u202A", "\u202B", "\u202C", "\u202D", "\u202E", "\u2066", "\u2067", "\u2068", "\u2069"}) {
    std::string out = report::html_escape(std::string("a") + control + "b");
    EXPECT_FALSE(has(out, control)) << out;
    EXPECT_TRUE(has(out, "<span class=bidi")) << out;
    EXPECT_FALSE(has(out, "\"")) << out;  // inert inside a quoted attribute too
  }
  // Neighbours of the ranges and other text stay as they are.
  for (const char* plain : {"\u2029", "\u202F", "\u2065", "\u206A", "é", "\u2014"})
    EXPECT_EQ(report::html_escape(plain), plain);
  // A form's value comes back unchanged.
  EXPECT_EQ(report::html_attr("t\u202E\"<"), "t\u202E&quot;&lt;");
}

TEST_F(Viewer, RunsPageListsEveryRunWithProgressAndAnABForm) {
  auto r = get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/html; charset=utf-8");
  for (const char* want :
       {"<a href=\"/run?tag=v1\">v1</a>", "<a href=\"/run?tag=v2\">v2</a>", "v2-qwen",
        "qwen2.5-coder-32b", "action=\"/ab\"", "http-equiv=\"refresh\""})
    EXPECT_TRUE(has(r->body, want)) << want;
  // v1: 15 fixture jobs and repaired.py, all finished but one (slow_pending is queued in v2 only).
  EXPECT_TRUE(has(r->body, "16 / 16 (100.0%)")) << r->body;
  auto css = get("/style.css");
  ASSERT_TRUE(css);
  EXPECT_EQ(css->status, 200);
  EXPECT_EQ(css->get_header_value("Content-Type"), "text/css; charset=utf-8");
  EXPECT_TRUE(has(css->body, ".rounds"));
}

TEST_F(Viewer, EveryResponseForbidsScriptsAndOutsideAssets) {
  for (const char* path : {"/", "/run?tag=v2", "/nowhere", "/style.css"}) {
    auto r = get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->get_header_value("Content-Security-Policy"),
              "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
              "base-uri 'none'; frame-ancestors 'none'")
        << path;
    EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");
    for (const char* banned : {"<script", "http://", "https://", "src="})
      EXPECT_FALSE(has(r->body, banned)) << path << ": " << banned;
  }
}

TEST_F(Viewer, FiltersChangeTheRows) {
  auto all = get("/run?tag=v2");
  ASSERT_TRUE(all);
  ASSERT_EQ(all->status, 200);
  auto every = keys_of(all->body);
  EXPECT_EQ(every.size(), 16u);  // 14 fixture jobs of v2 and the two viewer samples
  EXPECT_TRUE(has(all->body, "16 of 16 samples match; page 1 of 1"));

  auto failed = get("/run?tag=v2&verdict=failed");
  ASSERT_TRUE(failed);
  auto f = keys_of(failed->body);
  EXPECT_LT(f.size(), every.size());
  EXPECT_NE(std::find(f.begin(), f.end(), "hostile&quot;&#39;&lt;i&gt;.py"), f.end())
      << failed->body;
  EXPECT_EQ(std::find(f.begin(), f.end(), "repaired.py"), f.end());
  EXPECT_TRUE(has(failed->body, "<option value=\"failed\" selected>"));

  auto q = get("/run?tag=v2&q=REPAIR");
  ASSERT_TRUE(q);
  EXPECT_EQ(keys_of(q->body), std::vector<std::string>{"repaired.py"});
  auto round = get("/run?tag=v2&round=1");
  ASSERT_TRUE(round);
  EXPECT_EQ(keys_of(round->body), std::vector<std::string>{"repaired.py"});
  auto failure = get("/run?tag=v2&failure=generate%2Fno_kernel_launch");
  ASSERT_TRUE(failure);
  EXPECT_EQ(keys_of(failure->body), std::vector<std::string>{"wrong_launch.py"});
  auto flag = get("/run?tag=v1&flag=mutant_survived");
  ASSERT_TRUE(flag);
  EXPECT_EQ(keys_of(flag->body), std::vector<std::string>{"vacuous_test.py"});
  auto cause = get("/run?tag=v2&cause=sample&verdict=crashed");
  ASSERT_TRUE(cause);
  EXPECT_EQ(keys_of(cause->body), std::vector<std::string>{"llvm_abort.py"});

  // Sorted by cost, most expensive first: the first row costs at least as much as the last.
  auto by_cost = get("/run?tag=v2&sort=cost&desc=1");
  ASSERT_TRUE(by_cost);
  auto sorted = keys_of(by_cost->body);
  ASSERT_EQ(sorted.size(), every.size());
  EXPECT_NE(sorted, every);

  // Bad parameters are refused with their name.
  auto bad = get("/run?tag=v2&page=zero");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_TRUE(has(bad->body, "parameter &#39;page&#39; must be a whole number")) << bad->body;
  bad = get("/run?tag=v2&verdict=great");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  bad = get("/run?tag=v2&sort=colour");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  auto unknown = get("/run?tag=v9");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_TRUE(has(unknown->body, "no run tagged &#39;v9&#39;")) << unknown->body;
  auto nowhere = get("/admin");
  ASSERT_TRUE(nowhere);
  EXPECT_EQ(nowhere->status, 404);
}

// Each filter's choices carry how many samples they list: every count equals the keys its
// filter gives, and the outcomes' counts add up to the run.
TEST_F(Viewer, EachFiltersCountsAreTheSamplesItLists) {
  static const std::regex select(R"re(<select name="(\w+)">(.*?)</select>)re");
  static const std::regex option(R"re(<option value="([^"]+)"[^>]*>[^<]* \((\d+)\)</option>)re");
  std::set<std::string> offered;
  for (const std::string tag : {"v1", "v2"}) {
    auto page = get("/run?tag=" + tag);
    ASSERT_TRUE(page);
    const auto total = keys_of(page->body).size();
    for (auto s = std::sregex_iterator(page->body.begin(), page->body.end(), select);
         s != std::sregex_iterator(); ++s) {
      const std::string name = (*s)[1], options = (*s)[2];
      std::size_t sum = 0, choices = 0;
      for (auto o = std::sregex_iterator(options.begin(), options.end(), option);
           o != std::sregex_iterator(); ++o, ++choices) {
        const std::string value = (*o)[1];
        const auto count = static_cast<std::size_t>(std::stoul((*o)[2]));
        auto keys = get("/keys?tag=" + tag + "&" + name + "=" + report::url_encode(value));
        ASSERT_TRUE(keys);
        EXPECT_EQ(static_cast<std::size_t>(std::count(keys->body.begin(), keys->body.end(), '\n')),
                  count)
            << tag << " " << name << "=" << value;
        sum += count;
      }
      if (name == "verdict" || name == "round") {
        EXPECT_EQ(sum, total) << tag << " " << name;
      }
      if (choices > 0) offered.insert(name);
    }
  }
  // Between them the two runs offer a choice in every filter.
  EXPECT_EQ(offered, (std::set<std::string>{"cause", "failure", "flag", "round", "verdict"}));
}

TEST(ViewerPaging, PagesCarryTheFiltersAndCoverEverySampleOnce) {
  ViewerFixture vf("report:\n  serve:\n    page_size: 5\n");
  ServeProcess server(vf.config());
  httplib::Client c("127.0.0.1", server.port());
  std::vector<std::string> seen;
  for (int page = 1; page <= 4; ++page) {
    auto r = c.Get(("/run?tag=v2&sort=key&page=" + std::to_string(page)).c_str());
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
    auto keys = keys_of(r->body);
    EXPECT_EQ(keys.size(), page < 4 ? 5u : 1u);
    seen.insert(seen.end(), keys.begin(), keys.end());
    if (page < 4) {
      EXPECT_TRUE(has(r->body, "href=\"/run?tag=v2&amp;page=" + std::to_string(page + 1) + "\""))
          << r->body;
    }
  }
  EXPECT_EQ(seen.size(), 16u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
}

TEST_F(Viewer, SamplePageShowsEveryRoundWithItsDifferences) {
  auto r = get("/sample?tag=v2&key=repaired.py");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string& h = r->body;
  for (const char* want :
       {"id=\"round-0\"", "id=\"round-1\"", "round 0: generate", "repair 1",
        // round 0's failing line, marked in its test
        "unitest_code line 3: <code>    assert run_scale(x).sum() == 8</code>",
        "<mark class=\"failing\">    assert run_scale(x).sum() == 8</mark>",
        // repair 1 changed one line of the test, none of the wrapper
        "<del>-     assert run_scale(x).sum() == 8</del>",
        "<ins>+     assert run_scale(x).sum() == 4</ins>", "+1 -1 lines", "unchanged",
        // the verdicts, mutants, coverage, cross-compile and reasoning
        "<dd class=\"verdict\">failed</dd>",
        // the speed label's flag and why it was not timed, beside the verdict
        "<dd class=\"verdict\">passed; speed flagged: not timed: timing failed: "
        "RuntimeError: CUDA out of memory</dd>",
        "killed 5 of 6 that apply; survived: zero_tail", "mask off by one (code line 4)",
        "output sizes: 4; tail path: false", "hip:gfx942: ok", "The reference doubles nothing",
        "&#39; debug &#39;v2&#39; &#39;repaired.py&#39; --out", "tokens, $0.0200"})
    EXPECT_TRUE(has(h, want)) << want;
  // The same sample in the other run, and the two runs' A/B page.
  EXPECT_TRUE(has(h,
                  "in other runs: <a href=\"/sample?tag=v1&amp;key=repaired.py\">v1</a> (<a "
                  "href=\"/ab?a=v1&amp;b=v2\">A/B</a>)"))
      << h;
  auto v1 = get("/sample?tag=v1&key=repaired.py");
  ASSERT_TRUE(v1);
  EXPECT_EQ(v1->status, 200);
  EXPECT_FALSE(has(v1->body, "id=\"round-1\""));
  auto missing = get("/sample?tag=v2&key=v1_only.py");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_TRUE(has(missing->body, "is not in run &#39;v2&#39;")) << missing->body;
}

TEST_F(Viewer, HostileSampleShowsAsText) {
  auto r = get("/sample?tag=v2&key=" + report::url_encode("hostile\"'<i>.py"));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string& h = r->body;
  EXPECT_FALSE(has(h, "<script")) << h;
  EXPECT_FALSE(has(h, "<img")) << h;
  EXPECT_FALSE(has(h, "</textarea>"));
  EXPECT_FALSE(has(h, "\" onmouseover"));
  for (const char* want :
       {"&lt;/script&gt;&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;",
        "&lt;img src=x onerror=&quot;document.title=&#39;pwned&#39;&quot;&gt;",
        "&lt;/pre&gt;&lt;script&gt;", "&lt;/textarea&gt;", "hostile&quot;&#39;&lt;i&gt;.py"})
    EXPECT_TRUE(has(h, want)) << want;
  // The key in links: percent-encoded, then escaped.
  auto run = get("/run?tag=v2&q=hostile");
  ASSERT_TRUE(run);
  EXPECT_TRUE(
      has(run->body, "href=\"/sample?tag=v2&amp;q=hostile&amp;key=hostile%22%27%3Ci%3E.py\""))
      << run->body;
  EXPECT_FALSE(has(run->body, "<i>"));
}

TEST_F(Viewer, BidirectionalOverridesInKeysAndCodeShowAsMarkers) {
  const std::string key = "rtl_\u202Eyp.exe_gnp.py";
  vf.fx().exec("add_bidi_overrides");
  auto run = get("/run?tag=v2&q=rtl_");
  ASSERT_TRUE(run);
  ASSERT_EQ(run->status, 200) << run->body;
  auto sample = get("/sample?tag=v2&key=" + report::url_encode(key));
  ASSERT_TRUE(sample);
  ASSERT_EQ(sample->status, 200) << sample->body;
  for (const std::string* body : {&run->body, &sample->body}) {
    EXPECT_FALSE(has(*body, "\u202E")) << *body;
    EXPECT_TRUE(has(*body, "rtl_<span class=bidi title=U+202E>&#x27E6;U+202E&#x27E7;</span>"))
        << *body;
  }
  EXPECT_FALSE(has(sample->body, "\u2067"));
  EXPECT_TRUE(has(sample->body, "&#x27E6;U+2067&#x27E7;</span>admin")) << sample->body;
  // The link still names the real key.
  EXPECT_TRUE(has(run->body, "key=rtl_%E2%80%AEyp.exe_gnp.py")) << run->body;
  auto css = get("/style.css");
  ASSERT_TRUE(css);
  EXPECT_TRUE(has(css->body, "unicode-bidi: isolate"));
  EXPECT_TRUE(has(css->body, "span.bidi"));
}

TEST_F(Viewer, NotFoundPagesNameNeitherTheDatabaseNorOtherRuns) {
  const std::string db_path = vf.fx().db_path().string();
  const std::string db_name = std::filesystem::path(db_path).filename().string();
  for (const char* path : {"/run?tag=nope", "/sample?tag=nope&key=x.py", "/ab?a=v1&b=nope",
                           "/sample?tag=v2&key=nothing.py", "/nowhere"}) {
    auto r = get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 404) << path;
    EXPECT_FALSE(has(r->body, db_path)) << path << r->body;
    EXPECT_FALSE(has(r->body, db_name)) << path << r->body;
    EXPECT_FALSE(has(r->body, "known tags")) << path << r->body;
    EXPECT_FALSE(has(r->body, "v2-qwen")) << path << r->body;
  }
  auto r = get("/run?tag=nope");
  ASSERT_TRUE(r);
  EXPECT_TRUE(has(r->body, "no run tagged &#39;nope&#39;")) << r->body;
  EXPECT_FALSE(has(r->body, "v1,")) << r->body;
}

TEST_F(Viewer, ABPageListsTheFlipsWithLinksToBothVersions) {
  auto r = get("/ab?a=v1&b=v2");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  // compare's figures for the fixture (tests/cli/compare_test.cpp: 3 lost, 5 gained) plus
  // repaired.py gained.
  EXPECT_TRUE(has(r->body, "gained: verified in v2 only (6)")) << r->body;
  EXPECT_TRUE(has(r->body, "lost: verified in v1 only (3)"));
  EXPECT_TRUE(has(r->body, "<a href=\"/sample?tag=v1&amp;key=repaired.py\">failed</a>"));
  EXPECT_TRUE(has(r->body, "<a href=\"/sample?tag=v2&amp;key=repaired.py\">verified</a>"));
  auto same = get("/ab?a=v1&b=v1");
  ASSERT_TRUE(same);
  EXPECT_EQ(same->status, 400);
}

TEST_F(Viewer, ReadOnlyRefusesEveryOtherMethod) {
  httplib::Client c("127.0.0.1", server.port());
  std::int64_t outputs = vf.fx().scalar("count_stage_outputs");
  std::vector<httplib::Result> refused;
  refused.push_back(c.Post("/run?tag=v2", "x", "text/plain"));
  refused.push_back(c.Put("/", "x", "text/plain"));
  refused.push_back(c.Delete("/sample?tag=v2&key=repaired.py"));
  refused.push_back(c.Patch("/", "x", "text/plain"));
  refused.push_back(c.Options("/"));
  for (const auto& r : refused) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 405);
    EXPECT_EQ(r->get_header_value("Allow"), "GET, HEAD");
  }
  auto head = c.Head("/run?tag=v2");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_TRUE(head->body.empty());
  EXPECT_EQ(vf.fx().scalar("count_stage_outputs"), outputs);
}

TEST_F(Viewer, AnswersLoopbackHostsOnly) {
  // DNS rebinding: names that resolve anywhere, however much they look like a loopback address.
  for (const char* hostile :
       {"attacker.example:8370", "127.attacker.example", "127.attacker.example:8370",
        "127.0.0.1.nip.io", "127.0.0.1.nip.io:8370", "localhost.attacker.example",
        "127.0.0.1:8370@attacker.example", "127.0.0.1:80:90", "[::1].attacker.example", "[::1]x",
        "127.1", "0177.0.0.1", "127.0.0.1:", "127.0.0.1:abc", "::1", ""}) {
    auto r = get("/", {{"Host", hostile}});
    ASSERT_TRUE(r) << hostile;
    EXPECT_EQ(r->status, 403) << hostile;
    EXPECT_FALSE(has(r->body, "v1")) << hostile;
  }
  for (const char* loopback : {"localhost:8370", "localhost", "LocalHost:1", "127.0.0.1",
                               "127.0.0.1:8370", "127.255.3.4:80", "[::1]", "[::1]:8370"}) {
    auto r = get("/", {{"Host", loopback}});
    ASSERT_TRUE(r) << loopback;
    EXPECT_EQ(r->status, 200) << loopback;
  }
}

TEST_F(Viewer, ReadsWhileAnotherConnectionWritesAndShowsTheChange) {
  // An open write transaction (as kforged holds while it commits) does not block the pages.
  ASSERT_TRUE(vf.fx().db().exec("BEGIN IMMEDIATE").ok());
  vf.fx().exec("set_run_state", {"v1", "paused"});
  auto during = get("/");
  ASSERT_TRUE(during);
  EXPECT_EQ(during->status, 200);
  ASSERT_TRUE(vf.fx().db().exec("COMMIT").ok());
  auto after = get("/run?tag=v1");
  ASSERT_TRUE(after);
  EXPECT_TRUE(has(after->body, "gpt-4o-mini, paused,")) << after->body;
}

TEST_F(Viewer, ARunThatMovesIsReadAgainAndOneThatDoesNotIsServedFromMemory) {
  // The first view reads v1's outcomes and keeps them; a job taken by a daemon changes the run's
  // fingerprint (its jobs by state), so the next view reads them again and shows it.
  auto before = get("/run?tag=v1&verdict=unfinished");
  ASSERT_TRUE(before);
  EXPECT_TRUE(keys_of(before->body).empty()) << before->body;
  auto again = get("/run?tag=v1&verdict=unfinished");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->body, before->body);
  auto ab_before = get("/ab?a=v1&b=v2");
  ASSERT_TRUE(ab_before);
  EXPECT_TRUE(has(ab_before->body, "; 2 of v1 and 2 of v2 not compared")) << ab_before->body;
  vf.fx().exec("lease_job", {"v1", "add_kernel.py"});
  auto after = get("/run?tag=v1&verdict=unfinished");
  ASSERT_TRUE(after);
  EXPECT_EQ(keys_of(after->body), std::vector<std::string>{"add_kernel.py"}) << after->body;
  // The A/B page reads the same outcomes: add_kernel.py is no longer compared.
  auto ab = get("/ab?a=v1&b=v2");
  ASSERT_TRUE(ab);
  EXPECT_TRUE(has(ab->body, "; 3 of v1 and 3 of v2 not compared")) << ab->body;
}

TEST(ViewerServe, RefusesAnotherAddressWithoutAToken) {
  ViewerFixture vf;
  auto r = run_process({binary("apps/kforge/kforge").string(), "--config", vf.config().string(),
                        "serve", "--listen", "0.0.0.0:0"},
                       {}, 30);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(has(r.err,
                  "refusing to serve on 0.0.0.0, which is not a loopback address, "
                  "without a token: set report.serve.token"))
      << r.err;
  r = run_process({binary("apps/kforge/kforge").string(), "--config", vf.config().string(), "serve",
                   "--listen", "0.0.0.0:0"},
                  {"KFORGE_REPORT_SERVE_TOKEN=short"}, 30);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(has(r.err, "report.serve.token")) << r.err;
  EXPECT_TRUE(has(r.err, "at least 16 characters")) << r.err;
  EXPECT_FALSE(has(r.err, "short")) << r.err;
  r = run_process({binary("apps/kforge/kforge").string(), "--config", vf.config().string(), "serve",
                   "--listen", "nohost"},
                  {}, 30);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r.err, "must be HOST:PORT")) << r.err;
}

// Issue 56, 10: each reason a --listen address cannot be used is named, not "in use" for all.
TEST(ViewerServe, EveryBindFailureSaysWhy) {
  ViewerFixture vf;
  ServeProcess first(vf.config());
  const std::vector<std::string> token = {
      "KFORGE_REPORT_SERVE_TOKEN=s3cret-viewer-token-0123456789"};
  auto serve = [&](const std::string& listen) {
    return run_process({binary("apps/kforge/kforge").string(), "--config", vf.config().string(),
                        "serve", "--listen", listen},
                       token, 30);
  };
  auto r = serve("127.0.0.1:" + std::to_string(first.port()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has(r.err, "the address is in use")) << r.err;
  r = serve("no-such-host.invalid:0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has(r.err, "the host 'no-such-host.invalid' does not resolve")) << r.err;
  EXPECT_FALSE(has(r.err, "in use")) << r.err;
  r = serve("203.0.113.7:0");  // TEST-NET-3: no machine's address
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has(r.err, "203.0.113.7 is not an address of this machine")) << r.err;
  EXPECT_FALSE(has(r.err, "in use")) << r.err;
}

TEST(ViewerServe, AnotherAddressNeedsTheTokenByHeaderOrCookie) {
  const std::string token = "s3cret-viewer-token-0123456789";
  ViewerFixture vf;
  ServeProcess server(vf.config(), "0.0.0.0:0", {"KFORGE_REPORT_SERVE_TOKEN=" + token});
  httplib::Client c("127.0.0.1", server.port());
  auto r = c.Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_TRUE(has(r->body, "needs its token"));
  EXPECT_FALSE(has(r->body, token));
  r = c.Get("/", {{"Authorization", "Bearer " + token + "x"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  r = c.Get("/", {{"Authorization", "Bearer wrong"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  r = c.Get("/", {{"Authorization", "Bearer " + token}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  // Opened once with ?token=: a cookie, and the address bar loses the token.
  r = c.Get(("/run?token=" + token).c_str());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 303);
  EXPECT_EQ(r->get_header_value("Location"), "/run");
  EXPECT_TRUE(has(r->get_header_value("Set-Cookie"), "kforge_token=" + token + "; HttpOnly"));
  // A deep link keeps its query: the redirect leads to the page it names.
  r = c.Get(
      ("/sample?tag=v2&key=" + report::url_encode("repaired.py") + "&token=" + token).c_str());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 303);
  const std::string location = r->get_header_value("Location");
  EXPECT_EQ(location, "/sample?key=repaired.py&tag=v2");
  EXPECT_FALSE(has(location, token));
  r = c.Get(location.c_str(), {{"Cookie", "kforge_token=" + token}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_TRUE(has(r->body, "repaired.py"));
  r = c.Get("/?token=wrong");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  r = c.Get("/run?tag=v2", {{"Cookie", "other=1; kforge_token=" + token}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  // Still read-only with the token.
  auto post = c.Post("/", {{"Authorization", "Bearer " + token}}, "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  std::string out = server.stop();
  EXPECT_TRUE(has(out, "token required")) << out;
  EXPECT_FALSE(has(out, token)) << out;
}

}  // namespace
}  // namespace kforge::test

namespace kforge::test {
namespace {

class ViewerSearch : public ::testing::Test {
 protected:
  httplib::Result get(const std::string& path) {
    httplib::Client c("127.0.0.1", server.port());
    return c.Get(path.c_str());
  }
  std::vector<std::string> keys(const std::string& path) {
    auto r = get(path);
    EXPECT_TRUE(r) << path;
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << path << r->body;
    return keys_of(r->body);
  }
  static bool contains(const std::vector<std::string>& v, const std::string& k) {
    return std::find(v.begin(), v.end(), k) != v.end();
  }
  ViewerFixture vf;
  ServeProcess server{vf.config()};
};

TEST_F(ViewerSearch, FindsWordsInTheCodeTheAnswersAndTheVerdictsCombinedWithFilters) {
  // A name in the samples' code (repaired.py's and the corpus's vacuous_test.py), not in their
  // keys.
  const std::vector<std::string> scale = {"repaired.py", "vacuous_test.py"};
  EXPECT_EQ(keys("/run?tag=v2&q=scale_kernel"), scale);
  // Any run of characters, case aside: part of a name, punctuation included.
  EXPECT_EQ(keys("/run?tag=v2&q=ALE_KERN"), scale);
  EXPECT_EQ(keys("/run?tag=v2&q=torch.ones(4)"), std::vector<std::string>{"repaired.py"});
  // The hostile sample's code, found by the text of its script.
  auto hostile = keys("/run?tag=v2&q=document.title");
  EXPECT_TRUE(contains(hostile, "hostile&quot;&#39;&lt;i&gt;.py")) << hostile.size();
  // Every word must match, each in any of the sample's texts: scale_kernel is in repaired.py's
  // code, "unitest_code line 3" in its first verdict's detail.
  EXPECT_EQ(keys("/run?tag=v2&q=scale_kernel%20unitest_code%20line"),
            std::vector<std::string>{"repaired.py"});
  EXPECT_TRUE(keys("/run?tag=v2&q=scale_kernel%20Mismatched").empty());
  // Combined with the filters: AssertionError is in several verdicts' details.
  auto failed = keys("/run?tag=v2&q=AssertionError&verdict=failed");
  EXPECT_TRUE(contains(failed, "layernorm.py"));
  EXPECT_FALSE(contains(failed, "repaired.py"));
  EXPECT_EQ(keys("/run?tag=v2&q=AssertionError&verdict=verified"),
            std::vector<std::string>{"repaired.py"});
  // A run's answers are its own: v1's repaired.py never wrote torch.ones.
  EXPECT_TRUE(keys("/run?tag=v1&q=torch.ones").empty());
  // The query language cannot be spelled: quotes, operators and stars are text.
  for (const char* q : {"%22", "a%22%20OR%20%22b", "NEAR(x%20y)", "*", "body%3Ax", "%5E"}) {
    auto r = get(std::string("/run?tag=v2&q=") + q);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << q << r->body;
  }
}

TEST_F(ViewerSearch, FindsASampleThatArrivedAfterTheViewerStarted) {
  for (const char* q : {"pangolin", "quokka_launch", "wombat"})
    EXPECT_TRUE(keys(std::string("/run?tag=v2&q=") + q).empty()) << q;
  vf.fx().exec("add_late_sample");
  vf.fx().exec("add_late_job");
  // The description, at import.
  EXPECT_EQ(keys("/run?tag=v2&q=pangolin"), std::vector<std::string>{"late.py"});
  vf.fx().exec("add_late_answer");
  vf.fx().exec("add_late_verdict");
  // The wrapper, as the answer arrived; the verifier's detail, as the verdict did.
  EXPECT_EQ(keys("/run?tag=v2&q=quokka_launch"), std::vector<std::string>{"late.py"});
  EXPECT_EQ(keys("/run?tag=v2&q=wombat&verdict=failed"), std::vector<std::string>{"late.py"});
}

TEST_F(ViewerSearch, ColumnHeadersSortAndKeepTheFilters) {
  auto r = get("/run?tag=v2&verdict=failed");
  ASSERT_TRUE(r);
  // Each sortable header links to the same filter sorted by it; the current one (key) the other
  // way.
  EXPECT_TRUE(has(
      r->body, "<a class=\"sort\" href=\"/run?tag=v2&amp;verdict=failed&amp;sort=cost\">cost</a>"))
      << r->body;
  EXPECT_TRUE(has(r->body,
                  "<th aria-sort=\"ascending\"><a class=\"sort\" "
                  "href=\"/run?tag=v2&amp;verdict=failed&amp;desc=1\">sample</a>"));
  auto by_cost = get("/run?tag=v2&verdict=failed&sort=cost");
  ASSERT_TRUE(by_cost);
  EXPECT_TRUE(has(by_cost->body,
                  "<th class=\"num\" aria-sort=\"ascending\"><a class=\"sort\" "
                  "href=\"/run?tag=v2&amp;verdict=failed&amp;sort=cost&amp;desc=1\">cost</a>"))
      << by_cost->body;
  // Sorted by key the other way: the same rows, reversed (keys are unique).
  auto up = keys("/run?tag=v2&verdict=failed");
  auto down = keys("/run?tag=v2&verdict=failed&desc=1");
  std::reverse(down.begin(), down.end());
  EXPECT_EQ(up, down);
  EXPECT_GT(up.size(), 1u);
  // A sample's link carries the filter, for the sample page's way back.
  EXPECT_TRUE(has(r->body, "href=\"/sample?tag=v2&amp;verdict=failed&amp;key=layernorm.py\""))
      << r->body;
}

TEST_F(ViewerSearch, ABPageSaysWhatCompareSays) {
  TempDir dir;
  auto html = dir.path() / "compare.html";
  auto ran = run_process({binary("apps/kforge/kforge").string(), "-c", vf.config().string(),
                          "compare", "v1", "v2", "--html", html.string()});
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  auto report = read_file(html);
  ASSERT_TRUE(report.ok());
  auto from = report->find("<section class=\"pair\">");
  auto to = report->find("</section>", from);
  ASSERT_NE(from, std::string::npos) << *report;
  const std::string section = report->substr(from, to + 10 - from);
  auto ab = get("/ab?a=v1&b=v2");
  ASSERT_TRUE(ab);
  ASSERT_EQ(ab->status, 200);
  // The A/B page holds compare's section of the pair as it is: the causes, the repair rounds'
  // yield, repaired and unfixable, the counts.
  EXPECT_TRUE(has(ab->body, section)) << ab->body;
  for (const char* want : {"Repair rounds", "unfixable (the model's answer)", "Verdicts"})
    EXPECT_TRUE(has(section, want)) << want;
}

TEST_F(ViewerSearch, RunsPageCountsAreLinksWithTheVerifiedRate) {
  auto r = get("/");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  const std::string& h = r->body;
  // The verified count and rate, a link to the verified samples.
  EXPECT_TRUE(has(h, "<a href=\"/run?tag=v2&amp;verdict=verified\">")) << h;
  EXPECT_TRUE(has(h, " of finished)</a>")) << h;
  // Counts link to the samples they count: a verdict, a quality flag (as words).
  EXPECT_TRUE(has(h, "<a href=\"/run?tag=v2&amp;verdict=failed\">failed ")) << h;
  EXPECT_TRUE(has(h, "<a href=\"/run?tag=v1&amp;flag=mutant_survived\">mutant survived 1</a>"))
      << h;
  // Tokens with thousands separators.
  EXPECT_TRUE(std::regex_search(h, std::regex(R"(<td class="num">\d{1,3}(,\d{3})+</td>)"))) << h;
  // The counts follow the samples pages they link to.
  auto flagged = keys("/run?tag=v1&flag=mutant_survived");
  EXPECT_EQ(flagged.size(), 1u);
}

// The file's lines, in order.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    auto nl = text.find('\n', start);
    out.push_back(text.substr(start, nl - start));
    start = nl == std::string::npos ? text.size() : nl + 1;
  }
  return out;
}

TEST_F(ViewerSearch, ExportsWhatIsShownAsADownloadAndAsTheSameCommand) {
  const std::string filter = "tag=v2&verdict=failed&q=AssertionError";
  auto page = get("/run?" + filter);
  ASSERT_TRUE(page);
  auto shown = keys_of(page->body);
  ASSERT_GT(shown.size(), 1u);
  const std::string config = std::filesystem::absolute(vf.config()).lexically_normal().string();
  EXPECT_TRUE(has(page->body, "<code id=\"export-command\">kforge -c &#39;" + config +
                                  "&#39; export &#39;v2&#39; --keys &#39;v2-keys.txt&#39; --out "
                                  "&#39;v2.jsonl&#39;</code>"))
      << page->body;
  EXPECT_TRUE(has(page->body, "<code id=\"retry-command\">kforge -c &#39;" + config +
                                  "&#39; retry &#39;v2&#39; --keys &#39;v2-keys.txt&#39; "
                                  "--dry-run</code>"));

  // The keys file: the keys the page lists, as a download.
  auto keys_file = get("/keys?" + filter);
  ASSERT_TRUE(keys_file);
  ASSERT_EQ(keys_file->status, 200) << keys_file->body;
  EXPECT_EQ(keys_file->get_header_value("Content-Disposition"),
            "attachment; filename=\"v2-keys.txt\"");
  auto listed = lines_of(keys_file->body);
  ASSERT_EQ(listed.size(), shown.size());
  for (std::size_t i = 0; i < listed.size(); ++i)
    EXPECT_EQ(report::html_escape(listed[i]), shown[i]);

  // The rows as JSON Lines: one record a sample shown, in key order.
  auto rows = get("/export?" + filter + "&format=jsonl");
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->status, 200) << rows->body;
  EXPECT_EQ(rows->get_header_value("Content-Type"), "application/x-ndjson; charset=utf-8");
  EXPECT_EQ(rows->get_header_value("Content-Disposition"),
            "attachment; filename=\"v2-jsonl.jsonl\"");
  auto records = lines_of(rows->body);
  ASSERT_EQ(records.size(), shown.size());
  for (const auto& line : records) {
    auto rec = nlohmann::json::parse(line);
    EXPECT_EQ(rec["verdict"], "failed") << line;
  }

  // The page's command writes the same bytes from the keys file.
  TempDir dir;
  write_text(dir.path() / "v2-keys.txt", keys_file->body);
  auto ran = run_process({binary("apps/kforge/kforge").string(), "-c", config, "export", "v2",
                          "--keys", (dir.path() / "v2-keys.txt").string(), "--out",
                          (dir.path() / "v2.jsonl").string()});
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  auto written = read_file(dir.path() / "v2.jsonl");
  ASSERT_TRUE(written.ok());
  EXPECT_EQ(*written, rows->body);
  // And retry would re-queue exactly them.
  auto retry =
      run_process({binary("apps/kforge/kforge").string(), "-c", config, "retry", "v2", "--keys",
                   (dir.path() / "v2-keys.txt").string(), "--dry-run", "--json"});
  ASSERT_EQ(retry.exit_code, 0) << retry.err;
  auto summary = nlohmann::json::parse(retry.out);
  EXPECT_EQ(summary["keys"].get<std::vector<std::string>>(), listed) << retry.out;

  // A key the run does not have is named.
  write_text(dir.path() / "bad.txt", "repaired.py\nnot_a_sample.py\n");
  auto bad = run_process({binary("apps/kforge/kforge").string(), "-c", config, "export", "v2",
                          "--keys", (dir.path() / "bad.txt").string(), "--out",
                          (dir.path() / "bad.jsonl").string()});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_TRUE(has(bad.err, "run 'v2' has no sample 'not_a_sample.py'")) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "bad.jsonl"));

  // The training shapes; an unknown one is refused by name.
  auto sft = get("/export?tag=v2-qwen&format=sft");
  ASSERT_TRUE(sft);
  EXPECT_EQ(sft->status, 200) << sft->body;
  EXPECT_FALSE(sft->body.empty());
  auto unknown = get("/export?tag=v2&format=parquet");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 400);
  EXPECT_TRUE(has(unknown->body, "parameter &#39;format&#39;")) << unknown->body;
}

// The number a runs page's count link for run `tag` and `filter` (e.g. "verdict=failed") shows,
// -1 when it has none.
int runs_page_count(const std::string& html, const std::string& tag, const std::string& filter,
                    const std::string& words) {
  std::smatch m;
  std::regex re("<a href=\"/run\\?tag=" + tag + "&amp;" + filter + "\">" + words + " (\\d+)</a>");
  return std::regex_search(html, m, re) ? std::stoi(m[1]) : -1;
}

TEST_F(ViewerSearch, RunsPageCountsAreKeptUntilTheRunMoves) {
  auto before = get("/");
  ASSERT_TRUE(before);
  const int failed = runs_page_count(before->body, "v2", "verdict=failed", "failed");
  ASSERT_GT(failed, 0) << before->body;
  auto again = get("/");
  ASSERT_TRUE(again);
  EXPECT_EQ(runs_page_count(again->body, "v2", "verdict=failed", "failed"), failed);
  // A new sample of v2 verified as failed: the run's fingerprint moves, the counts follow.
  vf.fx().exec("add_late_sample");
  vf.fx().exec("add_late_job");
  vf.fx().exec("add_late_answer");
  vf.fx().exec("add_late_verdict");
  auto after = get("/");
  ASSERT_TRUE(after);
  EXPECT_EQ(runs_page_count(after->body, "v2", "verdict=failed", "failed"), failed + 1)
      << after->body;
  // v1 did not move: its line is the same.
  EXPECT_EQ(runs_page_count(after->body, "v1", "verdict=failed", "failed"),
            runs_page_count(before->body, "v1", "verdict=failed", "failed"));
}

TEST_F(ViewerSearch, ANewVerificationIsShownAtOnceByTheListsTheRunsPageAndTheABPage) {
  // Every page has read v2 (its outcomes, its line of the runs page and the A/B page are kept).
  EXPECT_TRUE(contains(keys("/run?tag=v2&verdict=failed"), "layernorm.py"));
  EXPECT_FALSE(contains(keys("/run?tag=v2&verdict=verified"), "layernorm.py"));
  auto runs = get("/");
  ASSERT_TRUE(runs);
  const int failed = runs_page_count(runs->body, "v2", "verdict=failed", "failed");
  ASSERT_GT(failed, 0) << runs->body;
  auto ab = get("/ab?a=v1&b=v2");
  ASSERT_TRUE(ab);
  EXPECT_TRUE(has(ab->body, "lost: verified in v1 only (3)")) << ab->body;
  EXPECT_TRUE(has(ab->body, "<a href=\"/sample?tag=v2&amp;key=layernorm.py\">failed</a>"));
  // Served again from memory: the same.
  EXPECT_TRUE(contains(keys("/run?tag=v2&verdict=failed"), "layernorm.py"));
  // layernorm.py is verified again in v2 and passes: its newest verdict is the one every page
  // shows, with no other row of the run changed (no job moved, no answer added).
  vf.fx().exec("add_reverification", {"v2", "layernorm.py", "passed", ""});
  EXPECT_FALSE(contains(keys("/run?tag=v2&verdict=failed"), "layernorm.py"));
  EXPECT_TRUE(contains(keys("/run?tag=v2&verdict=verified"), "layernorm.py"));
  auto runs_after = get("/");
  ASSERT_TRUE(runs_after);
  EXPECT_EQ(runs_page_count(runs_after->body, "v2", "verdict=failed", "failed"), failed - 1)
      << runs_after->body;
  auto ab_after = get("/ab?a=v1&b=v2");
  ASSERT_TRUE(ab_after);
  EXPECT_TRUE(has(ab_after->body, "lost: verified in v1 only (2)")) << ab_after->body;
  EXPECT_FALSE(has(ab_after->body, "<a href=\"/sample?tag=v2&amp;key=layernorm.py\">failed</a>"));
  // Another verification with the verdict it had first (failed, another detail): the newest
  // one's detail is shown.
  vf.fx().exec("add_reverification", {"v2", "layernorm.py", "failed", "AssertionError: ocelot"});
  auto page = get("/run?tag=v2&verdict=failed");
  ASSERT_TRUE(page);
  EXPECT_TRUE(contains(keys_of(page->body), "layernorm.py"));
  EXPECT_TRUE(has(page->body, "AssertionError: ocelot")) << page->body;
  auto ab_again = get("/ab?a=v1&b=v2");
  ASSERT_TRUE(ab_again);
  EXPECT_TRUE(has(ab_again->body, "lost: verified in v1 only (3)")) << ab_again->body;
}

TEST_F(ViewerSearch, ABPageFlipsParameter) {
  // Six flips gained: all shown, with no link to show more; flips=all gives the same tables.
  auto first = get("/ab?a=v1&b=v2");
  ASSERT_TRUE(first);
  EXPECT_FALSE(has(first->body, "id=\"gained-more\"")) << first->body;
  auto all = get("/ab?a=v1&b=v2&flips=all");
  ASSERT_TRUE(all);
  ASSERT_EQ(all->status, 200);
  EXPECT_TRUE(has(all->body, "gained: verified in v2 only (6)")) << all->body;
  // The fixture copied 20 times (bench/report/scale.sql): 126 gained, the first 100 shown, and
  // all of them with flips=all.
  auto scale = read_file(source_dir() / "bench" / "report" / "scale.sql");
  ASSERT_TRUE(scale.ok());
  ASSERT_TRUE(vf.fx()
                  .db()
                  .exec("CREATE TEMP TABLE bench_scale(copies INTEGER); "
                        "INSERT INTO bench_scale VALUES (20);" +
                        *scale)
                  .ok());
  auto many = get("/ab?a=v1&b=v2");
  ASSERT_TRUE(many);
  EXPECT_TRUE(has(many->body, "gained: verified in v2 only (126)")) << many->body;
  auto count_rows = [](const std::string& html, const std::string& id) {
    auto from = html.find("<table id=\"" + id + "\">");
    if (from == std::string::npos) return -1;
    auto to = html.find("</table>", from);
    int n = 0;
    for (auto at = html.find("<tr><td", from); at < to; at = html.find("<tr><td", at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count_rows(many->body, "gained"), 100);
  EXPECT_TRUE(has(many->body, "the first 100 of 126; <a href=\"/ab?a=v1&amp;b=v2&amp;flips=all\">"))
      << many->body;
  auto every = get("/ab?a=v1&b=v2&flips=all");
  ASSERT_TRUE(every);
  EXPECT_EQ(count_rows(every->body, "gained"), 126);
  EXPECT_FALSE(has(every->body, "id=\"gained-more\""));
  auto bad = get("/ab?a=v1&b=v2&flips=some");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_TRUE(has(bad->body, "parameter &#39;flips&#39;")) << bad->body;
}

TEST_F(ViewerSearch, NearDuplicateGroupIsAColumnAFilterAndTheSamplePageLinksItsMembers) {
  vf.fx().exec("add_late_sample");  // in no run
  vf.fx().exec("set_dup_group", {"softmax.py", "layernorm.py", "late.py", "0.875"});
  auto page = get("/run?tag=v2");
  ASSERT_TRUE(page);
  ASSERT_EQ(page->status, 200);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      page->body, m, std::regex(R"re(<a href="/run\?tag=v2&amp;group=(\d+)">\d+ \(3\)</a>)re")))
      << page->body;
  const std::string group = m[1];
  // The group's filter lists the members this run holds.
  EXPECT_EQ(keys("/run?tag=v2&group=" + group),
            (std::vector<std::string>{"layernorm.py", "softmax.py"}));
  EXPECT_TRUE(keys("/run?tag=v2&group=999999").empty());
  auto bad = get("/run?tag=v2&group=x");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  // Sorted by group, the grouped samples come first the other way.
  auto by_group = keys("/run?tag=v2&sort=group&desc=1");
  ASSERT_GE(by_group.size(), 2u);
  EXPECT_EQ((std::vector<std::string>{by_group[0], by_group[1]}),
            (std::vector<std::string>{"layernorm.py", "softmax.py"}));
  // The sample page names the group and links the other members in this run.
  auto sample = get("/sample?tag=v2&key=softmax.py");
  ASSERT_TRUE(sample);
  ASSERT_EQ(sample->status, 200);
  const std::string& h = sample->body;
  EXPECT_TRUE(has(h, "<a href=\"/run?tag=v2&amp;group=" + group + "\">group " + group +
                         "</a> (3 samples at the last kforge corpus dedup)"))
      << h;
  EXPECT_TRUE(has(h, "<a href=\"/sample?tag=v2&amp;key=layernorm.py\">layernorm.py</a>")) << h;
  EXPECT_TRUE(has(h, "<b>softmax.py</b> (this sample)")) << h;
  EXPECT_TRUE(has(h, "late.py (not in this run)")) << h;
  EXPECT_TRUE(has(h, "similarity 0.88 to softmax.py")) << h;
  // A sample in no group says nothing of groups.
  auto alone = get("/sample?tag=v2&key=add_kernel.py");
  ASSERT_TRUE(alone);
  EXPECT_FALSE(has(alone->body, "id=\"group\"")) << alone->body;
}

TEST_F(ViewerSearch, KernelShareAndCrossCompileTargetsAreColumns) {
  vf.fx().exec("set_speed", {"add_kernel.py", "v2", "41.5", "1.8", "1.6", "2.0", "1"});
  vf.fx().exec("set_kernel_share", {"add_kernel.py", "v2", "0.75"});
  vf.fx().exec("set_speed", {"softmax.py", "v2", "80", "0.9", "0.85", "0.95", "0"});
  vf.fx().exec("set_kernel_share", {"softmax.py", "v2", "0.25"});
  vf.fx().exec("set_cross_compile", {"add_kernel.py", "v2", "hip:gfx942", "ok", ""});
  vf.fx().exec("set_cross_compile", {"add_kernel.py", "v2", "hip:gfx90a", "error", "amdgcn: x"});
  auto page = get("/run?tag=v2");
  ASSERT_TRUE(page);
  ASSERT_EQ(page->status, 200);
  const std::string& h = page->body;
  EXPECT_TRUE(has(h, ">kernel share</a>")) << h;
  EXPECT_TRUE(has(h, "<th>targets</th>")) << h;
  EXPECT_TRUE(has(h, "<td class=\"num\">75.0%</td>")) << h;
  EXPECT_TRUE(has(h, "<td>hip:gfx90a error, hip:gfx942 ok</td>")) << h;
  // Sorted by share, largest first.
  auto by_share = keys("/run?tag=v2&sort=share&desc=1");
  ASSERT_GE(by_share.size(), 2u);
  EXPECT_EQ((std::vector<std::string>{by_share[0], by_share[1]}),
            (std::vector<std::string>{"add_kernel.py", "softmax.py"}));
  auto sample = get("/sample?tag=v2&key=add_kernel.py");
  ASSERT_TRUE(sample);
  EXPECT_TRUE(has(sample->body, "its kernels 75.0% of the timed call")) << sample->body;
}

TEST_F(ViewerSearch, SamplePageShowsOneRoundAtATimeWithItsDifferences) {
  auto all = get("/sample?tag=v2&verdict=verified&key=repaired.py");
  ASSERT_TRUE(all);
  ASSERT_EQ(all->status, 200);
  EXPECT_TRUE(has(all->body, "id=\"round-0\"")) << all->body;
  EXPECT_TRUE(has(all->body, "id=\"round-1\""));
  // The links to each round alone keep the list the page was opened from.
  EXPECT_TRUE(has(all->body, "<b>every round</b>")) << all->body;
  EXPECT_TRUE(has(all->body,
                  "<a href=\"/sample?tag=v2&amp;verdict=verified&amp;key=repaired.py&amp;show=1\">"
                  "repair 1</a>"))
      << all->body;
  auto one = get("/sample?tag=v2&verdict=verified&key=repaired.py&show=1");
  ASSERT_TRUE(one);
  ASSERT_EQ(one->status, 200);
  EXPECT_FALSE(has(one->body, "id=\"round-0\"")) << one->body;
  EXPECT_TRUE(has(one->body, "id=\"round-1\""));
  EXPECT_TRUE(has(one->body, "<b>repair 1</b>"));
  // Round 1 alone still shows what changed since round 0.
  EXPECT_TRUE(has(one->body, "<del>-     assert run_scale(x).sum() == 8</del>")) << one->body;
  EXPECT_TRUE(has(one->body, "<ins>+     assert run_scale(x).sum() == 4</ins>"));
  auto zero = get("/sample?tag=v2&key=repaired.py&show=0");
  ASSERT_TRUE(zero);
  EXPECT_TRUE(has(zero->body, "id=\"round-0\""));
  EXPECT_FALSE(has(zero->body, "id=\"round-1\""));
  auto bad = get("/sample?tag=v2&key=repaired.py&show=7");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_TRUE(has(bad->body, "parameter &#39;show&#39;")) << bad->body;
}

}  // namespace
}  // namespace kforge::test

namespace kforge::test {
namespace {

// The viewer's cache in this process, over the fixture's database: what kforge serve does at
// start (warm_cache) and when pages ask for the same run at once.
class ViewerCache : public ::testing::Test {
 protected:
  std::unique_ptr<store::Db> open() {
    auto db = store::Db::open({.path = vf.fx().db_path().string(), .migrate = false});
    EXPECT_TRUE(db.ok()) << db.error().message;
    return std::move(*db);
  }
  report::ViewResponse page(store::Db& db, const std::string& path,
                            std::map<std::string, std::string> params) {
    return report::view(db, {path, std::move(params)}, opts);
  }
  ViewerFixture vf;
  report::ViewCache cache;
  report::ViewOptions opts = [this] {
    report::ViewOptions o;
    o.cache = &cache;
    return o;
  }();
};

TEST_F(ViewerCache, WarmingReadsTheTwoNewestRunsAndTheirPagesReadNothingMore) {
  auto db = open();
  auto warmed = report::warm_cache(*db, opts);
  ASSERT_TRUE(warmed.ok()) << warmed.error().message;
  EXPECT_EQ(*warmed, 2);
  EXPECT_EQ(cache.reads(), 2);
  // The two newest runs (v2-qwen and v2: the A/B form's default pair) are read: their lists,
  // a sample and the export read no outcomes again.
  auto v2 = page(*db, "/run", {{"tag", "v2"}, {"verdict", "failed"}});
  EXPECT_EQ(v2.status, 200);
  EXPECT_TRUE(has(v2.body, "layernorm.py")) << v2.body;
  EXPECT_EQ(page(*db, "/run", {{"tag", "v2-qwen"}}).status, 200);
  EXPECT_EQ(page(*db, "/sample", {{"tag", "v2"}, {"key", "repaired.py"}}).status, 200);
  EXPECT_EQ(page(*db, "/keys", {{"tag", "v2"}, {"verdict", "failed"}}).status, 200);
  EXPECT_EQ(cache.reads(), 2);
  // v1 was not among them: its first page reads it.
  EXPECT_EQ(page(*db, "/run", {{"tag", "v1"}}).status, 200);
  EXPECT_EQ(cache.reads(), 3);
  // A new verification after the warming is shown: v2's changed sample is read again, not the
  // whole run (migration 0050's outcome_changes).
  vf.fx().exec("add_reverification", {"v2", "layernorm.py", "passed", ""});
  auto after = page(*db, "/run", {{"tag", "v2"}, {"verdict", "failed"}});
  EXPECT_FALSE(has(after.body, "layernorm.py")) << after.body;
  EXPECT_EQ(cache.reads(), 3);
  EXPECT_EQ(cache.updates(), 1);
  // Without a cache there is nothing to warm.
  EXPECT_FALSE(report::warm_cache(*db, report::ViewOptions{}).ok());
}

TEST_F(ViewerCache, PagesAskingForARunAtOnceReadItOnce) {
  // Eight threads, each with its own connection, open v2's list at the same moment: one reads
  // the outcomes, the others wait for that read (ViewCache::read_lock) and use it.
  constexpr int kThreads = 8;
  std::vector<std::unique_ptr<store::Db>> dbs;
  for (int i = 0; i < kThreads; ++i) dbs.push_back(open());
  std::vector<int> status(kThreads, 0);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();
      status[i] = page(*dbs[i], "/run", {{"tag", "v2"}}).status;
    });
  for (auto& t : threads) t.join();
  for (int s : status) EXPECT_EQ(s, 200);
  EXPECT_EQ(cache.reads(), 1);
}

TEST_F(ViewerCache, ColumnsSortByTheirValueThenByKey) {
  // The list sorted by a column is the run's samples ordered by that value (either way), ties by
  // key ascending; by key it is the key order, reversed with desc=1.
  auto db = open();
  auto run = report::find_run(*db, "v2");
  ASSERT_TRUE(run.ok());
  auto outcomes = report::load_outcomes(*db, *run);
  ASSERT_TRUE(outcomes.ok());
  auto expected = [&](auto value, bool desc) {
    std::vector<const report::SampleOutcome*> o;
    for (const auto& x : *outcomes) o.push_back(&x);
    std::sort(o.begin(), o.end(), [&](const auto* a, const auto* b) {
      if (value(*a) != value(*b)) return desc ? value(*a) > value(*b) : value(*a) < value(*b);
      return a->key < b->key;
    });
    std::string keys;
    for (const auto* x : o) keys += x->key + "\n";
    return keys;
  };
  auto listed = [&](std::map<std::string, std::string> p) {
    p["tag"] = "v2";
    return page(*db, "/keys", std::move(p)).body;
  };
  auto tokens = [](const report::SampleOutcome& o) {
    return o.prompt_tokens + o.completion_tokens;
  };
  auto round = [](const report::SampleOutcome& o) { return o.repair_round; };
  auto key = [](const report::SampleOutcome&) { return 0; };
  EXPECT_EQ(listed({{"sort", "tokens"}, {"desc", "1"}}), expected(tokens, true));
  EXPECT_EQ(listed({{"sort", "tokens"}}), expected(tokens, false));
  EXPECT_EQ(listed({{"sort", "round"}, {"desc", "1"}}), expected(round, true));
  EXPECT_EQ(listed({}), expected(key, false));
  std::string down = expected(key, false), up;
  auto lines = lines_of(down);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) up += *it + "\n";
  EXPECT_EQ(listed({{"desc", "1"}}), up);
  // Most samples are in round 0 (ties, ordered by key): the rounds' order is not the keys'.
  EXPECT_NE(expected(round, true), expected(key, false));
}

TEST_F(ViewerCache, TheDownloadOfASearchKeepsKeysThatNeedQuoting) {
  // The hostile sample's key holds a double quote, a quote and angle brackets: the rows the
  // export reads are picked by key in SQL (a JSON list), and it is among them.
  auto db = open();
  auto rows = page(*db, "/export", {{"tag", "v2"}, {"q", "document.title"}});
  ASSERT_EQ(rows.status, 200) << rows.body;
  auto keys = page(*db, "/keys", {{"tag", "v2"}, {"q", "document.title"}});
  ASSERT_EQ(keys.status, 200);
  EXPECT_TRUE(has(keys.body, "hostile\"'<i>.py\n")) << keys.body;
  int lines = 0;
  bool hostile = false;
  for (const auto& line : lines_of(rows.body)) {
    ++lines;
    auto rec = nlohmann::json::parse(line);
    hostile = hostile || rec["file"] == "hostile.py";  // its record, as imported
  }
  EXPECT_EQ(lines, static_cast<int>(lines_of(keys.body).size()));
  EXPECT_TRUE(hostile) << rows.body;
}

}  // namespace
}  // namespace kforge::test
