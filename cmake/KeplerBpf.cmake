# kepler_bpf_object(NAME SOURCE [HEADERS ...])
# kepler_bpf_object(NAME SOURCES SOURCE... [HEADERS HEADER...] [INCLUDES DIR...])
#
# Compiles the source(s) with clang for the BPF target (CO-RE, BTF), links
# several into one object with `bpftool gen object` (one object: libbpf
# parses the kernel's BTF once to load all of its programs), and generates
# its libbpf skeleton NAME.skel.h with bpftool, all at build time. Creates
# the INTERFACE target NAME-skel: link it to get the skeleton's include
# directory and libbpf.
find_program(KEPLER_CLANG NAMES clang clang-14 REQUIRED)
find_program(KEPLER_BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)

if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|amd64")
  set(KEPLER_BPF_ARCH x86)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  set(KEPLER_BPF_ARCH arm64)
else()
  set(KEPLER_BPF_ARCH ${CMAKE_SYSTEM_PROCESSOR})
endif()

function(kepler_bpf_object name)
  cmake_parse_arguments(BPF "" "" "SOURCES;HEADERS;INCLUDES" ${ARGN})
  if(NOT BPF_SOURCES)
    list(POP_FRONT BPF_UNPARSED_ARGUMENTS BPF_SOURCES)
    set(BPF_HEADERS ${BPF_UNPARSED_ARGUMENTS})
  endif()
  set(obj ${CMAKE_CURRENT_BINARY_DIR}/${name}.bpf.o)
  set(skel ${CMAKE_CURRENT_BINARY_DIR}/${name}.skel.h)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-multiarch
                  OUTPUT_VARIABLE multiarch OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(parts)
  set(includes)
  foreach(dir ${BPF_INCLUDES})
    list(APPEND includes -I${dir})
  endforeach()
  foreach(source ${BPF_SOURCES})
    get_filename_component(stem ${source} NAME_WE)
    set(part ${CMAKE_CURRENT_BINARY_DIR}/${name}-${stem}.part.o)
    add_custom_command(
      OUTPUT ${part}
      # -mcpu=v3: atomic fetch-and-add (Linux 5.12), to hand out process slots
      COMMAND ${KEPLER_CLANG} -g -O2 -target bpf -mcpu=v3 -Wall -Werror
              -D__TARGET_ARCH_${KEPLER_BPF_ARCH}
              -I${CMAKE_CURRENT_SOURCE_DIR} ${includes} -I/usr/include/${multiarch}
              -c ${CMAKE_CURRENT_SOURCE_DIR}/${source} -o ${part}
      DEPENDS ${source} ${BPF_HEADERS}
      COMMENT "BPF ${source}"
      VERBATIM)
    list(APPEND parts ${part})
  endforeach()
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${KEPLER_BPFTOOL} gen object ${obj} ${parts}
    DEPENDS ${parts}
    COMMENT "BPF object ${name}.bpf.o"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skel}
    COMMAND sh -c "'${KEPLER_BPFTOOL}' gen skeleton '${obj}' name '${name}' > '${skel}.tmp' && mv '${skel}.tmp' '${skel}'"
    DEPENDS ${obj}
    COMMENT "BPF skeleton ${name}.skel.h"
    VERBATIM)
  add_custom_target(${name}-skel-gen ALL DEPENDS ${skel})
  add_library(${name}-skel INTERFACE)
  target_include_directories(${name}-skel SYSTEM INTERFACE ${CMAKE_CURRENT_BINARY_DIR}
                                                    ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(${name}-skel INTERFACE PkgConfig::LIBBPF)
  add_dependencies(${name}-skel ${name}-skel-gen)
endfunction()
