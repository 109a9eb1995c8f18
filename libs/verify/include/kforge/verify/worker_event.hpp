#pragma once
// The worker's events: the lines the harness's long-lived worker (kforge_harness/worker.py) sends
// the pool on its control channel, besides the reports on each sample's result pipe. They are
// declared in kforge_harness/worker_events.txt, beside report_fields.txt and in its grammar (each
// top-level entry is an event, named by the line's "event" field; the entries under it are its
// other fields). The worker checks each event against the file before it sends it
// (report_schema.event_violation); the pool parses each through parse_worker_event(), which fails
// closed as parse_harness_report() does: an event that is not declared, or a field missing,
// unknown or of the wrong type, is an error naming it (the pool then takes the worker for failed:
// worker_start_failed before it was ready, worker_lost after). Adding a field or an event: its
// lines in worker_events.txt, the worker sending it and, if C++ reads it, a member here and its
// line in harness_report.cpp (docs/VERIFIER.md, "The worker's events").
//
// The pool's messages to the worker (run, prepare, exit) are declared the same way, in
// kforge_harness/worker_ops.txt, with the number of file descriptors each carries. The pool
// builds each through worker_op_text(), which checks it against the file; the worker checks each
// message it receives (report_schema.op_violation) and ends on one it does not declare, naming it
// in its log, which the pool puts in the lost sample's detail.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "kforge/core/enum_names.hpp"
#include "kforge/core/result.hpp"

namespace kforge::verify {

enum class WorkerEventKind { ready, started, finished };
inline constexpr EnumName<WorkerEventKind> kWorkerEventNames[] = {
    {WorkerEventKind::ready, "ready"},
    {WorkerEventKind::started, "started"},
    {WorkerEventKind::finished, "finished"}};

struct WorkerEvent {
  WorkerEventKind kind = WorkerEventKind::ready;
  // ready: the worker's pid; started: the sample's process.
  std::int64_t pid = -1;
  // ready: what it preloaded (module -> version or "import failed: ..."), its GPU probe
  // ({"ok": bool, ...}) and whether it passed, and Triton's cache key (null when none).
  nlohmann::json modules = nlohmann::json::object();
  nlohmann::json probe = nlohmann::json::object();
  bool probe_ok = false;
  nlohmann::json triton_key;
  // started, finished: the id of the pool's request.
  std::int64_t id = 0;
  // finished: the raw wait status, the process's peak RSS and its user + system CPU time.
  int status = -1;
  std::int64_t maxrss_kb = 0, cpu_ms = -1;
};

// One event as it came off the control channel, checked against worker_events.txt. Errors (kind
// "parse"): "worker event: 'paused' is not an event of worker_events.txt (ready, started,
// finished)", "worker event: field \"finished.cpu\" is not a field of the event
// (worker_events.txt)", "worker event: not a JSON object: ...".
Result<WorkerEvent> parse_worker_event(std::string_view line);

enum class WorkerOpKind { run, prepare, exit };
inline constexpr EnumName<WorkerOpKind> kWorkerOpNames[] = {
    {WorkerOpKind::run, "run"}, {WorkerOpKind::prepare, "prepare"}, {WorkerOpKind::exit, "exit"}};

// One message of the pool to its worker. run: fork the sample's process onto the descriptors
// sent with it (stdout, stderr, result pipe) and run the request in `file` (request.json);
// prepare: start a child ahead of its sample (`file`: prep.json) onto those and the read end of
// the pipe its request comes on later; exit: end.
struct WorkerOp {
  WorkerOpKind kind = WorkerOpKind::exit;
  std::int64_t id = 0;  // run, prepare: the pool's id of the process (WorkerEvent::id)
  std::string file;     // run, prepare
};

// The message's text, checked against worker_ops.txt (its fields and `fds`: the descriptors it
// is sent with). An error (kind "parse") names what the file does not declare: "worker message:
// 'start' is not an op of worker_ops.txt (run, prepare, exit)", "worker message: run came with 2
// file descriptors, declared 3".
Result<std::string> worker_op_text(const WorkerOp& op, std::size_t fds);

// What the pool writes for a prestarted sample process itself, declared in worker_ops.txt as its
// `file` entries and checked there by the process (report_schema.file_violation): prep, the file
// a prepare message names (prep.json); request, what goes down the process's request pipe.
enum class WorkerFile { prep, request };
inline constexpr EnumName<WorkerFile> kWorkerFileNames[] = {{WorkerFile::prep, "prep"},
                                                            {WorkerFile::request, "request"}};

// The content's text, checked against its declaration. An error (kind "parse") names the field:
// "worker file: field \"prep.gpu\" is missing".
Result<std::string> worker_file_text(WorkerFile file, const nlohmann::json& content);

}  // namespace kforge::verify
