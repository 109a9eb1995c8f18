# kforge-bench-storage: the bytes a 4,000-sample v2 run with repair rounds adds to the database
# (the real kforged against the fake provider; the benchmark plays the verifier).
add_executable(kforge-bench-storage ${CMAKE_CURRENT_LIST_DIR}/storage_bench.cpp)
target_link_libraries(kforge-bench-storage PRIVATE kforge_pipeline kforge_fake_llm kforge_store
  kforge_core CLI11::CLI11)
target_compile_definitions(kforge-bench-storage PRIVATE
  KFORGE_BENCH_SOURCE_DIR="${CMAKE_SOURCE_DIR}" KFORGE_BENCH_BUILD_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(kforge-bench-storage kforged kforge)
kforge_warnings(kforge-bench-storage)
