# kepler-push-pb: the C code protoc-c generates from the .proto files beside
# this one, into the including directory's build directory (readers/push for
# kepler-push, tests/fuzz for fuzz_push).
set(KEPLER_PUSH_PB_C)
foreach(proto remote_write otlp_metrics)
  add_custom_command(
    OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/${proto}.pb-c.c ${CMAKE_CURRENT_BINARY_DIR}/${proto}.pb-c.h
    COMMAND ${PROTOC_C} --c_out=${CMAKE_CURRENT_BINARY_DIR} --proto_path=${CMAKE_CURRENT_LIST_DIR} ${proto}.proto
    DEPENDS ${CMAKE_CURRENT_LIST_DIR}/${proto}.proto
    VERBATIM)
  list(APPEND KEPLER_PUSH_PB_C ${CMAKE_CURRENT_BINARY_DIR}/${proto}.pb-c.c)
endforeach()
add_library(kepler-push-pb STATIC ${KEPLER_PUSH_PB_C})
target_include_directories(kepler-push-pb PUBLIC ${CMAKE_CURRENT_BINARY_DIR})
target_link_libraries(kepler-push-pb PUBLIC PkgConfig::PROTOBUFC)
# generated code: none of the project's warnings apply
target_compile_options(kepler-push-pb PRIVATE -w)
