// The HTML report: self-contained, escaped, carrying the figures; rendered by headless Chromium
// through scripts/screenshot-report where a browser is installed.

#include <gtest/gtest.h>

#include <fstream>

#include "fixture.hpp"
#include "kforge/core/fs.hpp"
#include "kforge/report/compare.hpp"

namespace kforge::report {
namespace {

using test::ReportFixture;

Comparison fixture_comparison(ReportFixture& fx) {
  auto c = compare(fx.db(), {"v1", "v2", "v2-qwen"}, CompareOptions{0.95, 1'700'000'000'000});
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
  return std::move(c).value();
}

TEST(ReportHtml, SelfContainedWithTheFigures) {
  ReportFixture fx;
  std::string html = render_html(fixture_comparison(fx));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<style>"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  // Nothing is fetched and nothing runs: no scripts, links, sources or imported styles.
  for (const char* banned :
       {"<script", "<link", "src=", "href=", "@import", "url(", "http://", "https://"})
    EXPECT_EQ(html.find(banned), std::string::npos) << banned;
  for (const char* want :
       {"v2 vs v1", "v2-qwen vs v1", "38.5%", "53.8%", "0.7266", "copy_transpose.py",
        "retry_gen.py", "rejected by kernel facts", "mutant_survived", "generate/no_test_function",
        "$0.0240", "$0.0300", "2023-11-14T22:13:20.000Z", "not significant",
        "class=\"seg c-verified\""})
    EXPECT_NE(html.find(want), std::string::npos) << "missing: " << want;
}

TEST(ReportHtml, EscapesWhatComesFromTheDatabase) {
  RunInfo a, b;
  a.tag = "<script>alert(1)</script>";
  a.model = "m&m";
  b.tag = "b\"quoted\"";
  SampleOutcome o;
  o.sample_id = 1;
  o.key = "<img onerror=x>";
  o.state = store::JobState::done;
  o.stage = "done";
  o.verdict = "failed";
  SampleOutcome p = o;
  p.verdict = "passed";
  Comparison c;
  c.runs = {a, b};
  c.pairs.push_back(compare_outcomes(a, {o}, b, {p}, 0.95));
  std::string html = render_html(c);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;img onerror=x&gt;"), std::string::npos);
  EXPECT_NE(html.find("m&amp;m"), std::string::npos);
  EXPECT_NE(html.find("b&quot;quoted&quot;"), std::string::npos);
}

// Reads a PNG's width and height from its IHDR chunk.
bool png_size(const std::string& data, std::uint32_t& w, std::uint32_t& h) {
  if (data.size() < 24 || data.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return false;
  auto be32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(data[at + i]);
    return v;
  };
  w = be32(16);
  h = be32(20);
  return true;
}

TEST(ReportHtml, RendersInHeadlessChromium) {
  ReportFixture fx;
  auto html_path = fx.dir() / "report.html";
  auto png_path = fx.dir() / "report.png";
  ASSERT_TRUE(write_file_atomic(html_path, render_html(fixture_comparison(fx))).ok());
  auto r = test::run_process({(test::source_dir() / "scripts" / "screenshot-report").string(),
                              html_path.string(), png_path.string()},
                             {}, 120);
  if (r.exit_code == 77) GTEST_SKIP() << "no Chromium here: " << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string png = test::read_text(png_path);
  std::uint32_t w = 0, h = 0;
  ASSERT_TRUE(png_size(png, w, h)) << "not a PNG: " << png_path;
  EXPECT_EQ(w, 1200u);
  EXPECT_EQ(h, 1600u);
  // A blank page compresses to a few kilobytes; the report's text and charts do not.
  EXPECT_GT(png.size(), 40'000u);
}

}  // namespace
}  // namespace kforge::report
