// kforge serve [--listen HOST:PORT]: the read-only sample viewer in the browser (report/viewer.hpp
// renders the pages; this file serves them).
//
// Safe by construction: GET and HEAD only (anything else is 405); every response carries a
// Content-Security-Policy that loads nothing but our own stylesheet and runs no script; the
// database is opened without migrating and with PRAGMA query_only; on a loopback address only
// requests naming a loopback Host are answered (no DNS rebinding); any other address needs
// report.serve.token, which every request then presents (Authorization: Bearer, or the cookie
// that opening a page once with ?token=... sets), compared in constant time and never logged.

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "commands.hpp"
#include "kforge/app/http_guard.hpp"
#include "kforge/core/clock.hpp"
#include "kforge/report/escape.hpp"
#include "kforge/report/viewer.hpp"

namespace kforge::cli {
namespace {

using app::constant_time_equal;
using app::host_of;
using app::is_loopback;

constexpr const char* kCookie = "kforge_token";
// How many of the newest runs serve reads ahead as it starts (the A/B form's default pair).
constexpr int kWarmRuns = 2;

struct ServeArgs {
  std::string listen;  // empty: report.serve.listen
};

// One SQLite connection per request thread at a time: connections are opened as threads need
// them and handed back after each request.
class Connections {
 public:
  explicit Connections(const app::Config& cfg) : cfg_(cfg) {}
  Result<std::unique_ptr<store::Db>> take() {
    {
      std::lock_guard lock(mu_);
      if (!idle_.empty()) {
        auto db = std::move(idle_.back());
        idle_.pop_back();
        return db;
      }
    }
    return open_read_only(cfg_);
  }
  void give_back(std::unique_ptr<store::Db> db) {
    std::lock_guard lock(mu_);
    idle_.push_back(std::move(db));
  }

  // Opens the database without migrating it and makes the connection refuse writes.
  static Result<std::unique_ptr<store::Db>> open_read_only(const app::Config& c) {
    std::error_code ec;
    if (!std::filesystem::exists(c.store.path, ec))
      return fail("usage", "database " + c.store.path + " does not exist (store.path in " +
                               c.source + ", or KFORGE_DB)");
    KF_TRY(auto db, store::Db::open({.path = c.store.path,
                                     .busy_timeout_ms = c.store.busy_timeout_ms,
                                     .migrate = false}));
    KF_TRY(int version, db->schema_version());
    if (version != store::latest_schema_version())
      return fail("usage", "database " + c.store.path + " is at schema version " +
                               std::to_string(version) + ", this kforge reads version " +
                               std::to_string(store::latest_schema_version()) +
                               " (kforge status migrates it; the viewer never writes)");
    KF_CHECK(db->exec("PRAGMA query_only = ON"));
    return db;
  }

 private:
  const app::Config& cfg_;
  std::mutex mu_;
  std::vector<std::unique_ptr<store::Db>> idle_;
};

// The value of cookie `name` in a Cookie header, "" when absent.
std::string cookie(const std::string& header, const std::string& name) {
  std::size_t pos = 0;
  while (pos < header.size()) {
    while (pos < header.size() && (header[pos] == ' ' || header[pos] == ';')) ++pos;
    auto end = header.find(';', pos);
    std::string item = header.substr(pos, end == std::string::npos ? end : end - pos);
    if (item.rfind(name + "=", 0) == 0) return item.substr(name.size() + 1);
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return "";
}

void secure(httplib::Response& res) {
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
                 "base-uri 'none'; frame-ancestors 'none'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Cache-Control", "no-store");
}

void refuse(httplib::Response& res, int status, const std::string& message) {
  secure(res);
  res.status = status;
  res.set_content(message + "\n", "text/plain; charset=utf-8");
}

struct Listen {
  std::string host;
  int port = 0;
};

// Why HOST:PORT cannot be listened on, in words ("" when it can): the host does not resolve,
// the address is not on this machine, the port is taken or needs privileges. Found by binding
// a socket of our own first, as the server will.
std::string why_cannot_listen(const Listen& l) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(l.host.c_str(), std::to_string(l.port).c_str(), &hints, &found);
  if (rc != 0)
    return "the host '" + l.host + "' does not resolve (" + ::gai_strerror(rc) +
           "): give an IP address or a name this machine resolves";
  int err = EADDRNOTAVAIL;
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    const bool bound = ::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0;
    err = bound ? 0 : errno;
    ::close(fd);
    if (bound) break;
  }
  ::freeaddrinfo(found);
  switch (err) {
    case 0:
      return "";
    case EADDRINUSE:
      return "the address is in use (--listen another port, or :0 for any)";
    case EADDRNOTAVAIL:
      return l.host + " is not an address of this machine (`ip address` lists them; " +
             "127.0.0.1 for this machine only, 0.0.0.0 for all its addresses)";
    case EACCES:
      return "port " + std::to_string(l.port) +
             " needs privileges (below 1024): --listen a port of 1024 or more";
    default:
      return std::strerror(err);
  }
}

Result<Listen> parse_listen(const std::string& listen) {
  auto colon = listen.rfind(':');
  Listen l;
  if (colon == std::string::npos || colon == 0)
    return fail("usage", "--listen '" + listen + "' must be HOST:PORT, e.g. 127.0.0.1:8370");
  l.host = listen.substr(0, colon);
  if (l.host.size() > 2 && l.host.front() == '[') l.host = l.host.substr(1, l.host.size() - 2);
  std::string port = listen.substr(colon + 1);
  std::size_t used = 0;
  try {
    l.port = std::stoi(port, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != port.size() || l.port < 0 || l.port > 65535)
    return fail("usage", "--listen '" + listen + "': the port must be 0 to 65535");
  return l;
}

// What every request goes through first: the methods, the Host of a loopback viewer, the
// token (Handled: answered here, with the refusal or the token's redirect).
httplib::Server::HandlerResponse guard(const httplib::Request& req, httplib::Response& res,
                                       bool loopback, const std::string& token) {
  using H = httplib::Server::HandlerResponse;
  if (req.method != "GET" && req.method != "HEAD") {
    res.set_header("Allow", "GET, HEAD");
    refuse(res, 405, "kforge serve is read-only: GET and HEAD only");
    return H::Handled;
  }
  if (loopback && !is_loopback(host_of(req.get_header_value("Host")))) {
    refuse(res, 403, "this viewer answers requests for a loopback host only");
    return H::Handled;
  }
  if (token.empty()) return H::Unhandled;
  if (req.has_param("token")) {
    if (!constant_time_equal(req.get_param_value("token"), token)) {
      refuse(res, 401, "wrong token");
      return H::Handled;
    }
    // Keep it in a cookie and take it out of the address bar and history; the rest
    // of the query stays (a deep link opens its page).
    secure(res);
    res.set_header("Set-Cookie",
                   std::string(kCookie) + "=" + token + "; HttpOnly; SameSite=Strict; Path=/");
    std::string rest;
    for (const auto& [k, v] : req.params)
      if (k != "token")
        rest += (rest.empty() ? "?" : "&") + report::url_encode(k) + "=" + report::url_encode(v);
    res.set_redirect(req.path + rest, 303);
    return H::Handled;
  }
  std::string presented = cookie(req.get_header_value("Cookie"), kCookie);
  std::string auth = req.get_header_value("Authorization");
  if (auth.rfind("Bearer ", 0) == 0) presented = auth.substr(7);
  if (presented.empty() || !constant_time_equal(presented, token)) {
    refuse(res, 401,
           "this viewer needs its token: open this address with ?token=TOKEN once "
           "(report.serve.token), or send Authorization: Bearer TOKEN");
    return H::Handled;
  }
  return H::Unhandled;
}

}  // namespace

Command add_serve(CLI::App& root, Globals& g) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = root.add_subcommand(
      "serve", "Serve a read-only viewer of runs, samples, rounds and A/B flips in the browser");
  cmd->add_option("--listen", args->listen,
                  "HOST:PORT to listen on (default: report.serve.listen, 127.0.0.1:8370; port 0 "
                  "picks a free one)")
      ->type_name("HOST:PORT");
  cmd->footer(
      "Read-only: GET and HEAD only; works while kforged runs. On an address other than "
      "loopback it needs report.serve.token (or KFORGE_REPORT_SERVE_TOKEN, 16 characters or "
      "more): open the printed address with ?token=TOKEN once, or send Authorization: Bearer "
      "TOKEN.");
  return {
      cmd, [args, &g]() -> int {
        KF_TRY_OR_REPORT(app::Config cfg, load(g));
        KF_TRY_OR_REPORT(
            Listen l, parse_listen(args->listen.empty() ? cfg.report.serve.listen : args->listen));
        const std::string token = cfg.report.serve.token;
        const bool loopback = is_loopback(l.host);
        if (!loopback && token.empty())
          return report(
              Error{"usage", "refusing to serve on " + l.host +
                                 ", which is not a loopback address, without a token: set "
                                 "report.serve.token in " +
                                 cfg.source +
                                 " (or KFORGE_REPORT_SERVE_TOKEN) to a secret of 16 characters or "
                                 "more, or listen on 127.0.0.1"});
        // Fail now, not at the first request, on a missing or unreadable database.
        KF_TRY_OR_REPORT(auto first, Connections::open_read_only(cfg));
        Connections pool(cfg);
        pool.give_back(std::move(first));
        report::ViewCache cache;
        report::ViewOptions opts;
        opts.cache = &cache;
        opts.page_size = cfg.report.serve.page_size;
        opts.confidence = cfg.report.confidence;
        // The commands the pages show carry -c this file, from wherever they are run.
        if (cfg.source != "(defaults)")
          opts.config_path = std::filesystem::absolute(cfg.source).lexically_normal().string();

        httplib::Server svr;
        svr.set_payload_max_length(64 * 1024);
        svr.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
          return guard(req, res, loopback, token);
        });
        svr.Get(".*", [&](const httplib::Request& req, httplib::Response& res) {
          secure(res);
          auto db = pool.take();
          if (!db.ok()) {
            // The message names the database's path: for this terminal, not the client.
            std::fprintf(stderr, "kforge serve: %s\n", db.error().message.c_str());
            refuse(res, 500, "the viewer cannot open its database (see kforge serve's output)");
            return;
          }
          report::ViewRequest vr;
          vr.path = req.path;
          for (const auto& [k, v] : req.params) vr.params.emplace(k, v);  // first value wins
          report::ViewOptions o = opts;
          o.now_ms = system_clock().wall_ms();
          report::ViewResponse page = report::view(**db, vr, o);
          pool.give_back(std::move(*db));
          res.status = page.status;
          if (!page.filename.empty())
            res.set_header("Content-Disposition", "attachment; filename=\"" + page.filename + "\"");
          res.set_content(std::move(page.body), page.content_type.c_str());
        });
        // SO_REUSEADDR only (httplib's default SO_REUSEPORT would let two share a port).
        svr.set_socket_options([](socket_t sock) {
          int yes = 1;
          ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        });
        if (std::string why = why_cannot_listen(l); !why.empty())
          return report(Error{
              "io", "cannot listen on " + l.host + ":" + std::to_string(l.port) + ": " + why});
        errno = 0;
        int port = l.port == 0 ? svr.bind_to_any_port(l.host)
                               : (svr.bind_to_port(l.host, l.port) ? l.port : -1);
        if (port <= 0)
          return report(Error{"io", "cannot listen on " + l.host + ":" + std::to_string(l.port) +
                                        ": " +
                                        (errno == EADDRINUSE || errno == 0
                                             ? std::string("the address is in use (--listen "
                                                           "another port, or :0 for any)")
                                             : std::string(std::strerror(errno)))});
        std::string host = l.host.find(':') != std::string::npos ? "[" + l.host + "]" : l.host;
        std::printf("kforge serve: http://%s:%d/ (database %s, read-only%s)\n", host.c_str(), port,
                    cfg.store.path.c_str(), token.empty() ? "" : ", token required");
        std::fflush(stdout);
        // The newest runs' outcomes are read on a thread of their own while the server already
        // answers: the first page of a recent run then finds them read (or waits for that read).
        std::jthread warm([&cfg, &opts] {
          auto db = Connections::open_read_only(cfg);
          auto warmed =
              db.ok() ? report::warm_cache(**db, opts, kWarmRuns) : Result<int>(fail(db.error()));
          if (!warmed.ok())
            std::fprintf(stderr, "kforge serve: reading the newest runs ahead: %s\n",
                         warmed.error().message.c_str());
        });
        if (!svr.listen_after_bind())
          return report(Error{"io", "the viewer stopped listening on " + host});
        return kOk;
      }};
}

}  // namespace kforge::cli
