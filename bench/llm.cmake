# kforge-bench-llm: the LLM client against kforge-fake-llm on loopback.
add_executable(kforge-bench-llm ${CMAKE_CURRENT_LIST_DIR}/llm_bench.cpp)
target_link_libraries(kforge-bench-llm PRIVATE kforge_llm kforge_fake_llm kforge_core
  CURL::libcurl CLI11::CLI11)
kforge_warnings(kforge-bench-llm)
