#pragma once
// Debug workspaces: everything about one sample of a run in a folder, to read, diff and re-run
// by hand.
//
// DIR/<key>/ holds:
//   README.txt            what happened: state, stage, verdict, errors, and the file list
//   record.json, code.py  the original record and its kernel code
//   <stage>.prompt.md     each stage's prompt (the request's messages), <stage>.request.json the
//                         exact request, <stage>.response.txt the raw response (latest attempt)
//   analysis.json         the analysis (v2), kernel_wrapper.py, unitest_code.py
//   script.py             the exact script the verifier ran; run.sh re-runs it with the
//                         verifier's Python (DebugPython)
//   verdict.json          verdict, flags, detail, duration and the harness's report;
//                         stderr.txt the captured stderr
//   attempts.json         every attempt of every stage and verification, oldest first
// Files with nothing to hold are left out (a sample that failed at generation has no script).
// Each folder is built under a temp name and renamed into place; an existing folder is replaced
// only when it is a kforge debug folder.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kforge/store/db.hpp"

namespace kforge::report {

// The Python run.sh runs the script with: the verifier's (verifier.python, and
// verifier.python_path put first on PYTHONPATH). The script's preamble imports the modules that
// Python had (torch where installed): another python3 on PATH may fail to import it.
struct DebugPython {
  std::string python = "python3";
  std::vector<std::string> python_path;
};

// Writes DIR/<key>/ for one sample of the run; returns the folder. Errors: "not_found" (unknown
// tag, or the sample is not in the run), "conflict" (the folder exists and is not a debug
// folder), "io".
Result<std::filesystem::path> write_debug(store::Db& db, const std::string& tag,
                                          const std::string& key, const std::filesystem::path& dir,
                                          const DebugPython& python = {});

// Writes one folder per finished sample that is not verified; returns the folders, by key.
Result<std::vector<std::filesystem::path>> write_debug_failed(store::Db& db, const std::string& tag,
                                                              const std::filesystem::path& dir,
                                                              const DebugPython& python = {});

}  // namespace kforge::report
