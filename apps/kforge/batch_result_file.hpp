#pragma once
// kforge batch import's input: a batch result file (the OpenAI Batch API's output or error file,
// `vllm run-batch` output), read without holding it in memory. open() reads it once, line by
// line, checking every line (each error names the file and the line) and keeping, per
// custom_id, only where its line starts; an answer's body or a failed line's error is read
// again from there when its request comes (answer(), failure()). What stays in memory is about
// a hundred bytes per line, whatever the size of the answers.

#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kforge/core/result.hpp"

namespace kforge::cli {

// A result file's line for a request that failed there: vLLM's (`"response": {"status_code":
// 400, "body": null}, "error": "..."`) or the provider's error-file line.
struct FailedLine {
  int http_status = 0;
  std::string error;
};

class ResultFile {
 public:
  // Errors: the file cannot be read. Lines that are not result lines go into *errors (the
  // caller imports nothing then).
  static Result<std::unique_ptr<ResultFile>> open(const std::string& path,
                                                  std::vector<std::string>* errors);
  // The answer (a chat completion's JSON) of the line with this custom_id, read again from the
  // file; nullopt: no answer has it. Any thread.
  std::optional<std::string> answer(const std::string& id);
  // The failed line with this custom_id; nullopt: none. Any thread.
  std::optional<FailedLine> failure(const std::string& id);
  // The custom_ids of the answers and of the failed lines.
  std::vector<std::string> answer_ids() const { return ids(false); }
  std::vector<std::string> failure_ids() const { return ids(true); }
  std::size_t answers() const { return answers_; }
  std::size_t failures() const { return index_.size() - answers_; }

 private:
  struct Where {
    std::streamoff at = 0;  // the line's first byte
    int line = 0;
    bool failed = false;
  };
  explicit ResultFile(std::string path) : path_(std::move(path)) {}
  std::vector<std::string> ids(bool failed) const;
  std::optional<std::string> line_of(const std::string& id, bool failed);

  std::string path_;
  std::map<std::string, Where> index_;  // custom_id -> its line
  std::size_t answers_ = 0;
  std::mutex mu_;  // in_
  std::ifstream in_;
};

}  // namespace kforge::cli
