-- kforge schema, version 16: each stage a run recorded has a kind.
--
-- A pipeline's stages are named by its spec (prompts/<version>/pipeline.yaml), and each has a
-- kind: analysis, code or repair (libs/store states.hpp). A run records them in prompts_json
-- when it is created ({STAGE: {"version", "sha256", "schema_sha256", "kind"}}), and report and
-- status ask the run's kinds, not its version's or its stages' names, whether it has an analysis
-- and which stage holds the code. Runs created before kinds existed used the stages analyze
-- (analysis), generate (code) and repair (repair): they get those kinds here.

UPDATE runs SET prompts_json = json_set(prompts_json, '$.analyze.kind', 'analysis')
WHERE json_valid(prompts_json) AND json_type(prompts_json, '$.analyze') = 'object'
  AND json_type(prompts_json, '$.analyze.kind') IS NULL;

UPDATE runs SET prompts_json = json_set(prompts_json, '$.generate.kind', 'code')
WHERE json_valid(prompts_json) AND json_type(prompts_json, '$.generate') = 'object'
  AND json_type(prompts_json, '$.generate.kind') IS NULL;

UPDATE runs SET prompts_json = json_set(prompts_json, '$.repair.kind', 'repair')
WHERE json_valid(prompts_json) AND json_type(prompts_json, '$.repair') = 'object'
  AND json_type(prompts_json, '$.repair.kind') IS NULL;
