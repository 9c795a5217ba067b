# SPDX-License-Identifier: MIT
# The installable library (issue 30): `cmake --install BUILD [--prefix P]` puts under P
#   bin/npu (and the npu-qemu / qemu-system-npu links), include/npukit/*.h,
#   lib/libnpukit.so.MAJOR.MINOR.PATCH (soname libnpukit.so.MAJOR) and lib/libnpukit.a,
#   lib/pkgconfig/npukit.pc, lib/cmake/npukit/ (find_package(npukit): npukit::npukit, the
#   shared library, and npukit::npukit_static), share/man/man1/npu*.1,
#   share/bash-completion/completions/npu, share/doc/npukit/ (README, LICENSE, docs).
# `cpack -G DEB` (in the build directory) packs the same tree as a .deb.
# Both libraries hold every layer (base .. llm, docs/architecture.md "Layers"); their
# objects are position-independent (CMAKE_POSITION_INDEPENDENT_CODE, set at the top).
# tests/install_outside.cmaketest installs into a temporary prefix and builds a program
# against it with pkg-config and with find_package.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(NPUKIT_SOVERSION ${PROJECT_VERSION_MAJOR})
# The outside libraries the layers link (as plain names, for static linking and npukit.pc).
set(NPUKIT_EXTERNAL_LIBS jansson yaml protobuf-c m)

set(NPUKIT_LAYER_FILES "")
foreach(layer ${NPUKIT_LAYERS})
  list(APPEND NPUKIT_LAYER_FILES $<TARGET_FILE:npukit_${layer}>)
endforeach()

# The shared library: every layer archive whole, linked against the outside libraries.
add_library(npukit_shared SHARED ${CMAKE_SOURCE_DIR}/cmake/install/npukit_lib.c)
target_include_directories(npukit_shared PRIVATE ${CMAKE_SOURCE_DIR}/include)
target_link_libraries(npukit_shared PRIVATE -Wl,--whole-archive ${NPUKIT_LAYER_FILES} -Wl,--no-whole-archive
                      ${NPUKIT_JANSSON_LIB} ${NPUKIT_YAML_LIB} ${NPUKIT_PROTOBUF_C_LIB} m)
add_dependencies(npukit_shared ${NPUKIT_LAYER_LIBS})
set_target_properties(npukit_shared PROPERTIES OUTPUT_NAME npukit VERSION ${PROJECT_VERSION}
                      SOVERSION ${NPUKIT_SOVERSION} LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)

# The static library: the layer archives merged into one (ar's MRI script).
set(NPUKIT_STATIC_LIB ${CMAKE_BINARY_DIR}/lib/libnpukit.a)
set(mri "CREATE ${NPUKIT_STATIC_LIB}\n")
foreach(f ${NPUKIT_LAYER_FILES})
  string(APPEND mri "ADDLIB ${f}\n")
endforeach()
string(APPEND mri "SAVE\nEND\n")
file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/lib/npukit.mri CONTENT "${mri}")
add_custom_command(OUTPUT ${NPUKIT_STATIC_LIB}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/lib
  COMMAND ${CMAKE_COMMAND} -E remove -f ${NPUKIT_STATIC_LIB}
  COMMAND ${CMAKE_AR} -M < ${CMAKE_BINARY_DIR}/lib/npukit.mri
  DEPENDS ${NPUKIT_LAYER_LIBS} ${CMAKE_BINARY_DIR}/lib/npukit.mri
  COMMENT "merging the layer archives into lib/libnpukit.a")
add_custom_target(npukit_static ALL DEPENDS ${NPUKIT_STATIC_LIB})

# Man pages and bash completion from the commands' help (scripts/gen_docs.py).
set(NPUKIT_GEN_DOCS ${CMAKE_BINARY_DIR}/share)
add_custom_command(OUTPUT ${NPUKIT_GEN_DOCS}/man1/npu.1 ${NPUKIT_GEN_DOCS}/bash-completion/npu
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/gen_docs.py $<TARGET_FILE:npu> ${NPUKIT_GEN_DOCS}
  DEPENDS npu ${CMAKE_SOURCE_DIR}/scripts/gen_docs.py
  COMMENT "generating the man pages and bash completion from npu --help")
add_custom_target(npukit_docs ALL DEPENDS ${NPUKIT_GEN_DOCS}/man1/npu.1)

# pkg-config and the CMake package.
# relocatable: the prefix is found from the .pc file's own place (cmake --install --prefix P)
file(RELATIVE_PATH NPUKIT_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${CMAKE_SOURCE_DIR}/cmake/install/npukit.pc.in ${CMAKE_BINARY_DIR}/lib/pkgconfig/npukit.pc @ONLY)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/install/npukitConfig.cmake.in
  ${CMAKE_BINARY_DIR}/lib/cmake/npukit/npukitConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/npukit
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/lib/cmake/npukit/npukitConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)

install(TARGETS npu RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(CODE "foreach(n npu-qemu qemu-system-npu)
  execute_process(COMMAND \${CMAKE_COMMAND} -E create_symlink npu \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/\${n}\")
endforeach()")
install(TARGETS npukit_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Unspecified)
install(FILES ${NPUKIT_STATIC_LIB} DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/npukit DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h" PATTERN "*.def")
install(FILES ${CMAKE_BINARY_DIR}/lib/pkgconfig/npukit.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
install(FILES ${CMAKE_BINARY_DIR}/lib/cmake/npukit/npukitConfig.cmake
              ${CMAKE_BINARY_DIR}/lib/cmake/npukit/npukitConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/npukit)
install(DIRECTORY ${NPUKIT_GEN_DOCS}/man1 DESTINATION ${CMAKE_INSTALL_MANDIR})
install(FILES ${NPUKIT_GEN_DOCS}/bash-completion/npu DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

# CPack: `cpack -G DEB` in the build directory.
set(CPACK_PACKAGE_NAME npukit)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "npukit developers <npukit@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "software NPU platform: device models, drivers, compiler, the npu command")
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libjansson4, libyaml-0-2, libprotobuf-c1, libc6")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "gnuplot-nox")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
include(CPack)
