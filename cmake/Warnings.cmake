# kforge_warnings(TARGET): the project's warning set; -Werror when KFORGE_WERROR is on (CI).
# -Wnull-dereference is left out: at -O2, GCC 12 reports it inside libstdc++ and CLI11 code
# inlined into ours (std::string in CLI::detail::split), where no null pointer exists.
function(kforge_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wold-style-cast -Wcast-align -Wunused -Woverloaded-virtual
    -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC 12 reports -Wrestrict false positives inside libstdc++'s std::string concatenation at
    # -O2 (GCC bug 105329).
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(KFORGE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
