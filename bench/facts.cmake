# kforge-bench-facts: kernel facts over a crawl of Python files, one JSON line per file, for
# bench/facts/compare.py to check against Python's own parser (docs/BENCHMARKS.md).
add_executable(kforge-bench-facts ${CMAKE_CURRENT_LIST_DIR}/facts_bench.cpp)
target_link_libraries(kforge-bench-facts PRIVATE kforge_pipeline kforge_core CLI11::CLI11)
kforge_warnings(kforge-bench-facts)
