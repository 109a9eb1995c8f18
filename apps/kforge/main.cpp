// kforge: the command-line tool. Exceptions are caught here, once.

#include <cstdio>
#include <iostream>
#include <vector>

#include "commands.hpp"
#include "kforge/core/log.hpp"
#include "kforge/core/names.hpp"
#include "kforge/core/printable.hpp"

namespace kforge::cli {

namespace {
// The command line's command ("kforge run create"), once parsed: a usage error points to its help.
std::string& parsed_command() {
  static std::string path;
  return path;
}
}  // namespace

int report(const Error& e) {
  // Messages quote records, keys and answers: no control character of theirs is printed raw.
  std::string message = printable(e.message, Newlines::keep);
  // Bad usage points to the command's own help, as the parser's errors do.
  if (e.kind == "usage" && !parsed_command().empty() && message.find("--help") == std::string::npos)
    message += " (" + parsed_command() + " --help)";
  std::fprintf(stderr, "kforge: error: %s\n", message.c_str());
  return e.kind == "usage" ? kUsage : kFailure;
}

Result<app::Config> load(const Globals& g) {
  KF_TRY(app::Config c, app::load_config(g.config_path));
  // The CLI logs warnings and errors only, to stderr (-v: also info); the daemon honours
  // log.level.
  setup_logging(g.quiet ? "error" : g.verbose ? "info" : "warn");
  if (!g.quiet)
    for (const auto& w : c.warnings)
      std::fprintf(stderr, "kforge: warning: %s\n", printable(w, Newlines::keep).c_str());
  return c;
}

CLI::Validator whole_number(std::int64_t min, const std::string& what) {
  return CLI::Validator(
      [min, what](std::string& v) -> std::string {
        std::int64_t n = 0;
        std::size_t used = 0;
        try {
          n = std::stoll(v, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != v.size())
          return "expected a whole number of " + what + ", got '" + v + "'";
        if (n < min)
          return "expected " + std::to_string(min) + " or more " + what + ", got " + v +
                 (min == 1 && n == 0 ? " (leave the option out for no limit)" : "");
        return "";
      },
      "N>=" + std::to_string(min));
}

namespace {

// The first word of argv that names no subcommand where one is expected, as
// "unknown command 'stauts' (did you mean 'status'?)"; empty when the words are all known (CLI11
// then parses as usual). Option values are skipped: the options that take one are listed.
std::string unknown_command(const CLI::App& root, int argc, char** argv) {
  const CLI::App* at = &root;
  std::string path = "kforge";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") return "";
    if (!a.empty() && a[0] == '-') {
      if (a.find('=') == std::string::npos) {
        auto* opt = at->get_option_no_throw(a);
        if (opt == nullptr) opt = root.get_option_no_throw(a);
        if (opt != nullptr && opt->get_items_expected_min() > 0) ++i;
      }
      continue;
    }
    auto subs = at->get_subcommands([](const CLI::App*) { return true; });
    if (subs.empty()) return "";
    std::vector<std::string> names;
    const CLI::App* next = nullptr;
    for (const auto* s : subs) {
      names.push_back(s->get_name());
      if (s->check_name(a)) next = s;
    }
    if (next == nullptr) {
      std::string msg = "unknown command '" + a + "' for " + path;
      auto near = nearest_names(a, names);
      if (!near.empty()) msg += " (did you mean '" + near.front() + "'?)";
      std::string all;
      for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
      return msg + "; commands: " + all;
    }
    at = next;
    path += " " + next->get_name();
  }
  return "";
}

// The command that argv names, as typed to ask for its help: "kforge run create" (option values
// skipped, as unknown_command does); "kforge" when it names none.
std::string command_path(const CLI::App& root, int argc, char** argv) {
  const CLI::App* at = &root;
  std::string path = "kforge";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (!a.empty() && a[0] == '-') {
      if (a.find('=') == std::string::npos) {
        auto* opt = at->get_option_no_throw(a);
        if (opt == nullptr) opt = root.get_option_no_throw(a);
        if (opt != nullptr && opt->get_items_expected_min() > 0) ++i;
      }
      continue;
    }
    const CLI::App* next = nullptr;
    for (const auto* s : at->get_subcommands([](const CLI::App*) { return true; }))
      if (s->check_name(a)) next = s;
    if (next == nullptr) break;  // a positional argument of the command
    at = next;
    path += " " + next->get_name();
  }
  return path;
}

// Every subcommand's --help ends with the global options, which it takes too (before or after
// its name), so `kforge status --help` names --config without a look at `kforge --help`.
void add_global_options_to_help(CLI::App& root) {
  std::string globals = "Global options (before or after the command):";
  for (const CLI::Option* o : root.get_options()) {
    std::string names = o->get_name(false, true);
    if (names.empty()) continue;
    if (o->get_items_expected_min() > 0) names += " " + o->get_type_name();
    globals += "\n  " + names + (names.size() < 22 ? std::string(22 - names.size(), ' ') : " ") +
               o->get_description();
  }
  std::vector<CLI::App*> todo = root.get_subcommands([](CLI::App*) { return true; });
  while (!todo.empty()) {
    CLI::App* app = todo.back();
    todo.pop_back();
    std::string footer = app->get_footer();
    app->footer(footer.empty() ? globals : footer + "\n\n" + globals);
    for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) todo.push_back(sub);
  }
}

}  // namespace

}  // namespace kforge::cli

int main(int argc, char** argv) {
  using namespace kforge::cli;
  CLI::App app{"kforge: turn raw Triton kernels into verified training samples.", "kforge"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kforge ") + KFORGE_VERSION);
  Globals g;
  app.add_option("-c,--config", g.config_path,
                 "Configuration file (default: $KFORGE_CONFIG, "
                 "./kforge.yaml, /etc/kforge/kforge.yaml)")
      ->type_name("FILE");
  app.add_flag("-q,--quiet", g.quiet, "Print only errors and results");
  app.add_flag("-v,--verbose", g.verbose, "Also log what each step does (info level)");
  // The global options above are accepted after the subcommand too, as git and systemctl do:
  // subcommands pass what they do not know to their parent.
  app.fallthrough();
  std::vector<Command> commands;
  commands.push_back(add_import(app, g));
  commands.push_back(add_status(app, g));
  commands.push_back(add_compare(app, g));
  commands.push_back(add_export(app, g));
  commands.push_back(add_debug(app, g));
  commands.push_back(add_retry(app, g));
  commands.push_back(add_verify(app, g));
  commands.push_back(add_run(app, g));
  commands.push_back(add_corpus(app, g));
  commands.push_back(add_batch(app, g));
  commands.push_back(add_serve(app, g));
  add_global_options_to_help(app);
  if (std::string unknown = unknown_command(app, argc, argv); !unknown.empty()) {
    std::fprintf(stderr, "kforge: error: %s\n", unknown.c_str());
    return kUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line like every other error, then where the command's own help is.
    std::fprintf(stderr, "kforge: error: %s (%s --help)\n", e.what(),
                 command_path(app, argc, argv).c_str());
    return kUsage;
  }
  parsed_command() = command_path(app, argc, argv);
  try {
    for (const auto& c : commands) {
      if (c.app->parsed()) return c.run();
    }
    return kUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kforge: fatal: %s\n", e.what());
    return kFailure;
  }
}
