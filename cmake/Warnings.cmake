# kforge_warnings(TARGET): the project's warning set; -Werror when KFORGE_WERROR is on (CI).
function(kforge_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wold-style-cast -Wcast-align -Wunused -Woverloaded-virtual -Wnull-dereference
    -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough)
  if(KFORGE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
