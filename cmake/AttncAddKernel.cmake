# attnc_add_kernel: compile an attention-block spec at build time.
#
#   attnc_add_kernel(<target> SPEC <file.yaml>
#                    [STATIC | SHARED]          # default SHARED
#                    [ISA <isa>...]             # attnc --target; x86-avx512 x86-avx2: multi
#                    [HEADER <name.h>]          # default <target>.h
#                    [OUTPUT_DIRECTORY <dir>]   # default ${CMAKE_CURRENT_BINARY_DIR}/attnc/<target>
#                    [ATTNC_ARGS <arg>...])     # more attnc options (--no-fuse-qkv, ...)
#
# Runs `attnc <spec> -o lib<target>.so|.a --header <target>.h` when the spec
# or attnc itself changed (add_custom_command with both as DEPENDS) and
# gives <target>: an IMPORTED library to link, whose include directories
# hold the generated header. The header carries the whole C ABI (abi.h), so
# a kernel needs nothing else; link attnc::runtime_core as well for the
# loader's checks (attnrt::Kernel), or attnc::runtime for the weights
# loader, the reference interpreter and attnrt::compare too.
#
#   attnc_add_kernel(gpt2_block SPEC gpt2.yaml ISA x86-avx2)
#   target_link_libraries(app PRIVATE gpt2_block attnc::runtime)
#
# Works from an installed package (find_package(attnc CONFIG)) and inside
# attnc's own build tree (attnc::attnc is the just-built compiler); set
# ATTNC_EXECUTABLE to use another attnc binary.
include_guard(GLOBAL)

function(attnc_add_kernel target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "STATIC;SHARED"
    "SPEC;HEADER;OUTPUT_DIRECTORY" "ISA;ATTNC_ARGS")
  set(fn "attnc_add_kernel(${target})")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}: unexpected arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_SPEC)
    message(FATAL_ERROR "${fn}: SPEC <file.yaml> is required")
  endif()
  if(ARG_STATIC AND ARG_SHARED)
    message(FATAL_ERROR "${fn}: give STATIC or SHARED, not both")
  endif()
  if(TARGET ${target})
    message(FATAL_ERROR "${fn}: a target named '${target}' already exists")
  endif()
  get_filename_component(spec "${ARG_SPEC}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${spec}")
    message(FATAL_ERROR "${fn}: spec file '${spec}' does not exist")
  endif()

  if(ATTNC_EXECUTABLE)
    set(attnc_exe "${ATTNC_EXECUTABLE}")
  elseif(TARGET attnc::attnc)
    set(attnc_exe "$<TARGET_FILE:attnc::attnc>")
  else()
    message(FATAL_ERROR "${fn}: no attnc compiler: find_package(attnc CONFIG) "
                        "first, or set ATTNC_EXECUTABLE")
  endif()

  set(dir "${ARG_OUTPUT_DIRECTORY}")
  if(NOT dir)
    set(dir "${CMAKE_CURRENT_BINARY_DIR}/attnc/${target}")
  endif()
  file(MAKE_DIRECTORY "${dir}")
  set(header "${ARG_HEADER}")
  if(NOT header)
    set(header "${target}.h")
  endif()
  if(ARG_STATIC)
    set(kind STATIC)
    set(lib "${dir}/lib${target}.a")
  else()
    set(kind SHARED)
    set(lib "${dir}/lib${target}.so")
  endif()
  set(isa_args)
  if(ARG_ISA)
    list(JOIN ARG_ISA "," isa)
    set(isa_args --target "${isa}")
  endif()

  add_custom_command(
    OUTPUT "${lib}" "${dir}/${header}"
    COMMAND "${attnc_exe}" "${spec}" -o "${lib}" --header "${dir}/${header}"
            ${isa_args} ${ARG_ATTNC_ARGS}
    DEPENDS "${spec}" "${attnc_exe}"
    COMMENT "attnc: ${ARG_SPEC} -> lib${target} (${kind})"
    VERBATIM)
  add_custom_target(${target}.attnc DEPENDS "${lib}" "${dir}/${header}")

  add_library(${target} ${kind} IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES
    IMPORTED_LOCATION "${lib}"
    INTERFACE_INCLUDE_DIRECTORIES "${dir}"
    ATTNC_SPEC "${spec}"
    ATTNC_HEADER "${dir}/${header}")
  if(kind STREQUAL "SHARED")
    # Linked as -l<target> from its directory (with an rpath), so the
    # program records the library's name, not its build path.
    set_target_properties(${target} PROPERTIES IMPORTED_NO_SONAME TRUE)
  else()
    # The static kernel's built-in thread pool uses pthreads.
    find_package(Threads REQUIRED)
    set_target_properties(${target} PROPERTIES
      IMPORTED_LINK_INTERFACE_LANGUAGES C
      INTERFACE_LINK_LIBRARIES "Threads::Threads;m")
  endif()
  add_dependencies(${target} ${target}.attnc)
endfunction()
