# kforge-bench-dedup: near-duplicate groups over a large generated corpus (docs/BENCHMARKS.md).
add_executable(kforge-bench-dedup ${CMAKE_CURRENT_SOURCE_DIR}/dedup_bench.cpp)
target_link_libraries(kforge-bench-dedup PRIVATE kforge_dedup kforge_corpus kforge_store kforge_core)
kforge_warnings(kforge-bench-dedup)
