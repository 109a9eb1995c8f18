# kforge-bench-outcomes: a run's outcomes read whole (load_outcomes) on a large database, with the
# CPU time and page faults of each read (docs/BENCHMARKS.md, the viewer's page times).
add_executable(kforge-bench-outcomes ${CMAKE_CURRENT_SOURCE_DIR}/outcomes_bench.cpp)
target_link_libraries(kforge-bench-outcomes PRIVATE kforge_report kforge_store kforge_core)
kforge_warnings(kforge-bench-outcomes)
