#include "kforge/core/log.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "kforge/core/printable.hpp"

namespace kforge {

namespace {
// journald reads "<N>" priority prefixes from stderr lines (sd-daemon(3)).
class JournalFormatter final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    static constexpr const char* kPrio[] = {"<7>", "<7>", "<6>", "<4>", "<3>", "<2>", "<6>"};
    const char* p = kPrio[static_cast<int>(msg.level)];
    dest.append(p, p + 3);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JournalFormatter>();
  }
};

// The message through printable(): a model's answer, a corpus key or a sample's output quoted in
// a log line (kforged's stderr is the terminal under scripts/run) shows its escape sequences as
// text, never acts on the terminal. Newlines are kept.
class PrintableMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string text =
        printable(std::string_view(msg.payload.data(), msg.payload.size()), Newlines::keep);
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<PrintableMessage>();
  }
};
}  // namespace

void setup_logging(const std::string& level, const std::string& file) {
  std::shared_ptr<spdlog::logger> logger;
  if (!file.empty()) {
    logger = spdlog::basic_logger_mt("kforge", file);
  } else {
    logger = std::make_shared<spdlog::logger>("kforge",
                                              std::make_shared<spdlog::sinks::stderr_sink_mt>());
  }
  auto f = std::make_unique<spdlog::pattern_formatter>();
  f->add_flag<PrintableMessage>('~');
  if (file.empty() && std::getenv("JOURNAL_STREAM") != nullptr) {
    f->add_flag<JournalFormatter>('*').set_pattern("%*%~");
  } else {
    f->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %~");
  }
  logger->set_formatter(std::move(f));
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

}  // namespace kforge
