# kforge-bench-pipeline: a 4,000-sample v2 run (8,000 LLM calls) through the real kforged
# against the zero-latency fake provider, with a kill -9 half way (docs/BENCHMARKS.md).
add_executable(kforge-bench-pipeline ${CMAKE_CURRENT_LIST_DIR}/pipeline_bench.cpp)
target_link_libraries(kforge-bench-pipeline PRIVATE kforge_fake_llm kforge_store kforge_core
  PkgConfig::HTTPLIB CLI11::CLI11)
target_compile_definitions(kforge-bench-pipeline PRIVATE
  KFORGE_BENCH_SOURCE_DIR="${CMAKE_SOURCE_DIR}" KFORGE_BENCH_BUILD_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(kforge-bench-pipeline kforged kforge)
kforge_warnings(kforge-bench-pipeline)
