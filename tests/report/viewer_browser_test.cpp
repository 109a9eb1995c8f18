// kforge serve in headless Chromium (Debian's): what a person sees after the page loaded
// (--dump-dom gives the document as the browser built it), with screenshots of each page kept
// under build/test-artifacts/viewer/ (the path is printed). Skips with "no Chromium here" where
// none is installed (KFORGE_WITH_BROWSER=1 scripts/bootstrap installs it).

#include <gtest/gtest.h>

#include <regex>

#include "kforge/core/fs.hpp"
#include "kforge/report/escape.hpp"
#include "viewer_util.hpp"

namespace kforge::test {
namespace {

std::string chromium() {
  for (const char* dir : {"/usr/bin/", "/usr/local/bin/", "/snap/bin/"})
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
      std::string p = std::string(dir) + name;
      if (::access(p.c_str(), X_OK) == 0) return p;
    }
  return "";
}

bool has(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

int count(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (auto p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

class ViewerBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    browser_ = chromium();
    if (browser_.empty())
      GTEST_SKIP() << "no Chromium here (KFORGE_WITH_BROWSER=1 scripts/bootstrap)";
    artifacts_ = build_dir() / "test-artifacts" / "viewer";
    std::filesystem::create_directories(artifacts_);
  }
  std::vector<std::string> args(const std::string& what) {
    return {browser_,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--user-data-dir=" + (profile_.path() / "profile").string(),
            what};
  }
  // The document after the page loaded.
  std::string dom(const std::string& path) {
    auto a = args("--dump-dom");
    a.push_back(server_->url(path));
    auto r = run_process(a, {}, 90);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
  // A screenshot of the page, kept as an artefact; returns its size in bytes.
  std::uintmax_t screenshot(const std::string& path, const std::string& name) {
    auto png = artifacts_ / (name + ".png");
    std::filesystem::remove(png);
    auto a = args("--screenshot=" + png.string());
    a.insert(a.end() - 1, "--window-size=1400,1600");
    a.push_back(server_->url(path));
    auto r = run_process(a, {}, 90);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::printf("screenshot: %s\n", png.c_str());
    std::error_code ec;
    return std::filesystem::file_size(png, ec);
  }
  void start() { server_ = std::make_unique<ServeProcess>(vf_.config()); }

  std::string browser_;
  std::filesystem::path artifacts_;
  TempDir profile_;
  ViewerFixture vf_;
  std::unique_ptr<ServeProcess> server_;
};

TEST_F(ViewerBrowser, FiltersChangeTheRowsASampleShowsItsRoundsAndABListsFlips) {
  start();
  std::string all = dom("/run?tag=v2");
  std::string failed = dom("/run?tag=v2&verdict=failed");
  int rows_all = count(all, "<td class=\"key\">");
  int rows_failed = count(failed, "<td class=\"key\">");
  EXPECT_EQ(rows_all, 16) << all;
  EXPECT_GT(rows_failed, 0);
  EXPECT_LT(rows_failed, rows_all);
  EXPECT_EQ(count(failed, "<tr class=\"c-failed\">"), rows_failed) << failed;
  EXPECT_GT(screenshot("/run?tag=v2&verdict=failed", "samples-failed"), 20'000u);

  std::string sample = dom("/sample?tag=v2&key=repaired.py");
  EXPECT_TRUE(has(sample, "id=\"round-0\"")) << sample;
  EXPECT_TRUE(has(sample, "id=\"round-1\""));
  EXPECT_TRUE(has(sample, "<del>-     assert run_scale(x).sum() == 8</del>"));
  EXPECT_TRUE(has(sample, "<ins>+     assert run_scale(x).sum() == 4</ins>"));
  EXPECT_GT(screenshot("/sample?tag=v2&key=repaired.py", "sample-rounds"), 40'000u);

  std::string ab = dom("/ab?a=v1&b=v2");
  EXPECT_TRUE(has(ab, "<a href=\"/sample?tag=v2&amp;key=repaired.py\">verified</a>")) << ab;
  EXPECT_GT(screenshot("/ab?a=v1&b=v2", "ab"), 20'000u);
  EXPECT_GT(screenshot("/", "runs"), 20'000u);
}

TEST_F(ViewerBrowser, HostileSampleShowsAsTextAndRunsNothing) {
  start();
  std::string path = "/sample?tag=v2&key=" + report::url_encode("hostile\"'<i>.py");
  std::string d = dom(path);
  ASSERT_FALSE(d.empty());
  // The browser built no element from the sample's text: no script, no image, and the title
  // is the key, not what the script would have set.
  EXPECT_FALSE(has(d, "<script")) << d;
  EXPECT_FALSE(has(d, "<img")) << d;
  EXPECT_FALSE(has(d, "onmouseover=\"")) << d;
  EXPECT_FALSE(has(d, "<title>pwned")) << d;
  EXPECT_TRUE(has(d, "<title>hostile\"'&lt;i&gt;.py in v2 - kforge</title>")) << d;
  // The text itself is on the page, as text.
  EXPECT_TRUE(has(d, "# &lt;/script&gt;&lt;script&gt;document.title=\"pwned\"&lt;/script&gt;"))
      << d;
  EXPECT_TRUE(has(d, "&lt;img src=x onerror=\"document.title='pwned'\"&gt;")) << d;
  EXPECT_GT(screenshot(path, "sample-hostile"), 20'000u);
}

TEST_F(ViewerBrowser, SearchSortExportAndTheSamplePageAsACuratorSeesThem) {
  start();
  // Search: a word of the code finds the samples whose keys do not hold it.
  std::string found = dom("/run?tag=v2&q=scale_kernel");
  EXPECT_EQ(count(found, "<td class=\"key\">"), 2) << found;
  EXPECT_TRUE(has(found, ">repaired.py</a>")) << found;
  EXPECT_TRUE(has(found, ">vacuous_test.py</a>")) << found;
  EXPECT_TRUE(has(found, "value=\"scale_kernel\"")) << found;
  EXPECT_GT(screenshot("/run?tag=v2&q=AssertionError&sort=cost&desc=1", "samples-search-sorted"),
            20'000u);
  // Sort: the header the page is sorted by says so, and links the other way.
  std::string sorted = dom("/run?tag=v2&sort=tokens&desc=1");
  EXPECT_TRUE(has(sorted,
                  "aria-sort=\"descending\"><a class=\"sort\" "
                  "href=\"/run?tag=v2&amp;sort=tokens\">tokens</a>"))
      << sorted;
  // Export: the ready commands and the downloads of what is shown.
  std::string failed = dom("/run?tag=v2&verdict=failed");
  EXPECT_TRUE(has(failed, "id=\"export-command\">kforge -c ")) << failed;
  EXPECT_TRUE(has(failed, "export 'v2' --keys 'v2-keys.txt' --out 'v2.jsonl'</code>")) << failed;
  EXPECT_TRUE(has(failed, "href=\"/export?tag=v2&amp;verdict=failed&amp;format=sft\"")) << failed;
  EXPECT_TRUE(has(failed, "href=\"/keys?tag=v2&amp;verdict=failed\"")) << failed;
  // The sample page opened from the filtered list: the way back keeps the filter, previous and
  // next walk the list, the verdict and failing line come first, flags are words.
  std::string sample = dom("/sample?tag=v2&verdict=failed&key=layernorm.py");
  EXPECT_TRUE(has(sample, "<a href=\"/run?tag=v2&amp;verdict=failed\">back to the list</a>"))
      << sample;
  EXPECT_TRUE(has(sample, "rel=\"prev\"") || has(sample, "rel=\"next\"")) << sample;
  std::string repaired = dom("/sample?tag=v2&key=repaired.py");
  EXPECT_TRUE(has(repaired, "4 attempt(s): 2 LLM call(s), 2 verification(s)")) << repaired;
  EXPECT_TRUE(has(repaired, "<summary>prompt, with the repair evidence sent</summary>"))
      << repaired;
  EXPECT_TRUE(has(repaired, "<summary>raw answer</summary>")) << repaired;
  EXPECT_FALSE(has(repaired, "[\"")) << repaired;  // no JSON list on the page
  EXPECT_GT(screenshot("/sample?tag=v2&verdict=failed&key=layernorm.py", "sample-in-list"),
            20'000u);
}

// Each match of `re`'s first group in `text`, in order.
std::vector<std::string> all_of(const std::string& text, const std::regex& re) {
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it)
    out.push_back((*it)[1]);
  return out;
}

// Server-escaped text as the browser writes it back: quotes bare (&, <, > stay escaped).
std::string as_serialized(std::string s) {
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"&quot;", "\""},
                                 std::pair<std::string, std::string>{"&#39;", "'"}})
    for (auto p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
      s.replace(p, from.size(), to);
  return s;
}

TEST_F(ViewerBrowser, ABPageShowsWhatCompareSaysAsACuratorSeesIt) {
  start();
  TempDir dir;
  auto html = dir.path() / "compare.html";
  auto ran = run_process({binary("apps/kforge/kforge").string(), "-c", vf_.config().string(),
                          "compare", "v1", "v2", "--html", html.string()});
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  auto report = read_file(html);
  ASSERT_TRUE(report.ok());
  auto from = report->find("<section class=\"pair\">");
  ASSERT_NE(from, std::string::npos) << *report;
  const std::string section = report->substr(from, report->find("</section>", from) - from);
  const std::string ab = dom("/ab?a=v1&b=v2");
  // compare's headings (verified rate, outcomes, paired outcomes, counts, cost, repair rounds,
  // flipped samples), in its order, among the page's.
  const std::regex h3("<h3>([^<]*)</h3>");
  auto want = all_of(section, h3), got = all_of(ab, h3);
  ASSERT_GE(want.size(), 6u) << section;
  std::size_t at = 0;
  for (const auto& w : want) {
    while (at < got.size() && got[at] != as_serialized(w)) ++at;
    EXPECT_LT(at, got.size()) << "heading '" << w << "' missing or out of order:\n" << ab;
  }
  // Its sentences as the curator reads them: how many samples both runs finished and what was
  // not compared, the verdicts that are not the sample's (environment, infrastructure) apart,
  // the test's result.
  auto sentences = all_of(section, std::regex("<p class=\"meta\">([^<]*)</p>"));
  ASSERT_FALSE(sentences.empty()) << section;
  for (const auto& m : sentences) EXPECT_TRUE(has(ab, as_serialized(m))) << m << "\n" << ab;
  EXPECT_TRUE(has(ab, "samples finished in both runs")) << ab;
  EXPECT_TRUE(has(ab, "exact McNemar p =")) << ab;
  for (const char* heading : {"Repair rounds", "Counts"})
    EXPECT_TRUE(has(ab, std::string("<h3>") + heading + "</h3>")) << heading;
  EXPECT_TRUE(has(ab, "unfixable (the model's answer)")) << ab;
  EXPECT_GT(screenshot("/ab?a=v1&b=v2", "ab"), 20'000u);
}

TEST_F(ViewerBrowser, GroupShareTargetsAndOneRoundAtATimeAsACuratorSeesThem) {
  vf_.fx().exec("set_dup_group", {"softmax.py", "layernorm.py", "add_kernel.py", "0.9"});
  vf_.fx().exec("set_speed", {"add_kernel.py", "v2", "41.5", "1.8", "1.6", "2.0", "1"});
  vf_.fx().exec("set_kernel_share", {"add_kernel.py", "v2", "0.75"});
  vf_.fx().exec("set_cross_compile", {"add_kernel.py", "v2", "hip:gfx942", "ok", ""});
  start();
  // The list: the group column links to the group, share and targets are shown.
  std::string list = dom("/run?tag=v2&sort=group&desc=1");
  EXPECT_TRUE(has(list, "<td class=\"num\">75.0%</td>")) << list;
  EXPECT_TRUE(has(list, "<td>hip:gfx942 ok</td>")) << list;
  EXPECT_EQ(count(list, "&amp;group="), 3) << list;
  EXPECT_GT(screenshot("/run?tag=v2&sort=group&desc=1", "samples-groups"), 20'000u);
  // The sample page: its group with links to the other members.
  std::string sample = dom("/sample?tag=v2&key=softmax.py");
  EXPECT_TRUE(has(sample, "<a href=\"/sample?tag=v2&amp;key=layernorm.py\">layernorm.py</a>"))
      << sample;
  EXPECT_TRUE(has(sample, "<a href=\"/sample?tag=v2&amp;key=add_kernel.py\">add_kernel.py</a>"));
  // One round at a time, with its differences from the round before.
  std::string one = dom("/sample?tag=v2&key=repaired.py&show=1");
  EXPECT_FALSE(has(one, "id=\"round-0\"")) << one;
  EXPECT_TRUE(has(one, "id=\"round-1\""));
  EXPECT_TRUE(has(one, "<ins>+     assert run_scale(x).sum() == 4</ins>"));
  EXPECT_GT(screenshot("/sample?tag=v2&key=repaired.py&show=1", "sample-one-round"), 20'000u);
  EXPECT_GT(screenshot("/sample?tag=v2&key=softmax.py", "sample-group"), 20'000u);
}

}  // namespace
}  // namespace kforge::test
