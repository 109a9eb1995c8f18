// The `report` configuration section: defaults, file values, environment overrides, and errors
// that name the file and line.

#include <gtest/gtest.h>

#include "kforge/report/config.hpp"

namespace kforge::report {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

Result<ReportConfig> read(const std::string& yaml, std::map<std::string, std::string> env = {}) {
  KF_TRY(auto reader, ConfigReader::load_string(yaml, "kforge.yaml", env_of(std::move(env))));
  ReportConfig c;
  read_config(reader->root().child("report"), c);
  KF_CHECK(reader->finish());
  return c;
}

TEST(ReportConfigSection, DefaultsFileAndEnvironment) {
  auto d = read("{}");
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->confidence, 0.95);
  EXPECT_EQ(d->list_limit, 20);
  auto f = read("report:\n  confidence: 0.9\n  list_limit: 5\n");
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->confidence, 0.9);
  EXPECT_EQ(f->list_limit, 5);
  auto e = read("report:\n  confidence: 0.9\n", {{"KFORGE_REPORT_CONFIDENCE", "0.99"}});
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->confidence, 0.99);
}

TEST(ReportConfigSection, BadValuesNameFileAndLine) {
  auto r = read("report:\n  list_limit: 3\n  confidence: 1.5\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("kforge.yaml:3"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("confidence"), std::string::npos) << r.error().message;
  auto t = read("report:\n  list_limit: many\n");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("kforge.yaml:2"), std::string::npos) << t.error().message;
  auto u = read("report:\n  colour: blue\n");
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.error().message.find("colour"), std::string::npos) << u.error().message;
}

TEST(ReportConfigSection, ServeListenTokenAndPageSize) {
  auto d = read("{}");
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->serve.listen, "127.0.0.1:8370");
  EXPECT_EQ(d->serve.token, "");
  EXPECT_EQ(d->serve.page_size, 50);
  auto f = read("report:\n  serve:\n    listen: 0.0.0.0:9000\n    page_size: 20\n",
                {{"KFORGE_REPORT_SERVE_TOKEN", "0123456789abcdef0123"}});
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->serve.listen, "0.0.0.0:9000");
  EXPECT_EQ(f->serve.page_size, 20);
  EXPECT_EQ(f->serve.token, "0123456789abcdef0123");
  // A short token is refused by name and line, its value never repeated.
  auto s = read("report:\n  serve:\n    token: hunter2\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("kforge.yaml:3"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("report.serve.token"), std::string::npos) << s.error().message;
  EXPECT_EQ(s.error().message.find("hunter2"), std::string::npos) << s.error().message;
  auto l = read("report:\n  serve:\n    listen: everywhere\n");
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.error().message.find("HOST:PORT"), std::string::npos) << l.error().message;
  auto p = read("report:\n  serve:\n    page_size: 0\n");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("page_size"), std::string::npos) << p.error().message;
}

}  // namespace
}  // namespace kforge::report
