# kforge_embed(TARGET NAMESPACE VAR FILES...): compiles the given files into TARGET as a
# sorted table `std::span<const kforge::EmbeddedFile> NAMESPACE::VAR()`. The files stay the
# source of truth in the tree; embedding only spares the daemon from finding them at run time.
function(kforge_embed target ns var)
  set(out "${CMAKE_CURRENT_BINARY_DIR}/embedded_${var}.cpp")
  string(REPLACE ";" "|" files "${ARGN}")
  add_custom_command(
    OUTPUT "${out}"
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DNS=${ns} -DVAR=${var} "-DFILES=${files}"
            -P "${CMAKE_SOURCE_DIR}/cmake/EmbedGen.cmake"
    DEPENDS ${ARGN} "${CMAKE_SOURCE_DIR}/cmake/EmbedGen.cmake"
    COMMENT "Embedding ${var}" VERBATIM)
  target_sources(${target} PRIVATE "${out}")
  # Each table declares the same internal names; it stays its own translation unit.
  set_source_files_properties("${out}" PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()
