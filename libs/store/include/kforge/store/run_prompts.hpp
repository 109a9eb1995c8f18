#pragma once
// A run's stages as it recorded them when it was created (runs.prompts_json):
// {STAGE: {"version", "sha256", "schema_sha256", "kind"}, ..., "retry": {...}}. The kinds
// (states.hpp) say what each stage's answer holds, so report and status ask "has an analysis",
// "which stage holds the code" here, never by a pipeline's or a stage's name. Migration 0017 gave
// runs recorded before kinds theirs. The stages are stored in the spec's order (a run created
// before that kept them in name order); read them with nlohmann::ordered_json to keep it.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/store/states.hpp"

namespace kforge::store {

// The names of the recorded stages of this kind, in the JSON object's order. Entries without a kind
// (the retry template) belong to none.
template <class Json>
std::vector<std::string> stages_of_kind(const Json& prompts, StageKind kind) {
  std::vector<std::string> out;
  if (!prompts.is_object()) return out;
  for (const auto& [name, id] : prompts.items())
    if (id.is_object() && id.contains("kind") && id["kind"].is_string() &&
        value_of(kStageKindNames, id["kind"].template get<std::string>()) == kind)
      out.push_back(name);
  return out;
}

template <class Json>
bool has_stage_kind(const Json& prompts, StageKind kind) {
  return !stages_of_kind(prompts, kind).empty();
}

}  // namespace kforge::store
