# kepler_embed_text(<out.c> <symbol> <file>): writes a C file defining
# `const char <symbol>[]` with the contents of <file>, NUL-terminated, and
# rebuilds it when the file changes. No xxd needed.
function(kepler_embed_text out symbol file)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DIN=${file} -DOUT=${out} -DSYMBOL=${symbol}
            -P ${CMAKE_SOURCE_DIR}/cmake/KeplerEmbedRun.cmake
    DEPENDS ${file} ${CMAKE_SOURCE_DIR}/cmake/KeplerEmbedRun.cmake
    COMMENT "Embedding ${file}")
endfunction()
