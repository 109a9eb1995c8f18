# kforge-bench-llm: the LLM client against kforge-fake-llm on loopback.
add_executable(kforge-bench-llm ${CMAKE_CURRENT_LIST_DIR}/llm_bench.cpp)
target_link_libraries(kforge-bench-llm PRIVATE kforge_llm kforge_fake_llm kforge_core
  CURL::libcurl CLI11::CLI11)
kforge_warnings(kforge-bench-llm)

# kforge-bench-llm-yield: usable answers taken out of real models' answer shapes (CI: --check).
add_executable(kforge-bench-llm-yield ${CMAKE_CURRENT_LIST_DIR}/llm_yield.cpp)
target_link_libraries(kforge-bench-llm-yield PRIVATE kforge_llm kforge_fake_llm kforge_core
  CLI11::CLI11)
target_compile_definitions(kforge-bench-llm-yield PRIVATE KFORGE_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
kforge_warnings(kforge-bench-llm-yield)
add_test(NAME llm_yield COMMAND kforge-bench-llm-yield --check --verbose)
