# kforge-bench-batch: a 4,000-sample v2 run through the real kforged in interactive and in batch
# mode against the fake provider: calls, cost, daemon CPU and memory, database growth
# (docs/BENCHMARKS.md).
add_executable(kforge-bench-batch ${CMAKE_CURRENT_LIST_DIR}/batch_bench.cpp)
target_link_libraries(kforge-bench-batch PRIVATE kforge_fake_llm kforge_store kforge_core
  PkgConfig::HTTPLIB CLI11::CLI11)
target_compile_definitions(kforge-bench-batch PRIVATE
  KFORGE_BENCH_SOURCE_DIR="${CMAKE_SOURCE_DIR}" KFORGE_BENCH_BUILD_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(kforge-bench-batch kforged kforge)
kforge_warnings(kforge-bench-batch)
