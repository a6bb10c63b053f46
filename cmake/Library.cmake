# libmadengine: every object of engine, sim, sa, sm, perfmgr and node in one library,
# shared (libmadengine.so.SOVERSION, exporting only the API: MADENGINE_API
# symbols, filtered again by cmake/libmadengine.map.in) and static
# (libmadengine.a); installed with the public headers, a CMake package
# (find_package(madengine) -> madengine::madengine, madengine::madengine_static)
# and madengine.pc. The daemon and the tests link the module libraries.
#
# MADENGINE_SOVERSION names the C ABI: the project's major version. Bump that
# (CMakeLists.txt) with every incompatible change of the C ABI, then refresh
# abi/libmadengine.abi (scripts/abi.sh). The C++ API binds to the exact
# release instead (docs/embedding.md, "ABI and versions").
set(MADENGINE_SOVERSION ${PROJECT_VERSION_MAJOR})

set(madengine_objects
  $<TARGET_OBJECTS:madengine_engine> $<TARGET_OBJECTS:madengine_sim> $<TARGET_OBJECTS:madengine_sa>
  $<TARGET_OBJECTS:madengine_sm> $<TARGET_OBJECTS:madengine_perfmgr> $<TARGET_OBJECTS:madengine_node>)

# What the objects call: the same libraries the module targets link.
set(madengine_deps PkgConfig::IBUMAD PkgConfig::IBVERBS PkgConfig::TOMLPP spdlog::spdlog fmt::fmt Threads::Threads)
set(madengine_deps_installed ibumad ibverbs tomlplusplus spdlog fmt Threads::Threads)
set(madengine_pc_private "-libumad -libverbs -ltomlplusplus -lspdlog -lfmt")
if(MADENGINE_RING STREQUAL "dpdk")
  list(APPEND madengine_deps ${RTE_RING_LIB} ${RTE_EAL_LIB})
  list(APPEND madengine_deps_installed rte_ring rte_eal)
  string(APPEND madengine_pc_private " -lrte_ring -lrte_eal")
endif()
string(APPEND madengine_pc_private " -lstdc++ -lm -lpthread")

# The version script names the release in the C++ API's version node (see the map).
set(madengine_map ${PROJECT_BINARY_DIR}/generated/libmadengine.map)
configure_file(${CMAKE_CURRENT_LIST_DIR}/libmadengine.map.in ${madengine_map} @ONLY)
add_library(madengine_shared SHARED ${madengine_objects})
set_target_properties(madengine_shared PROPERTIES
  OUTPUT_NAME madengine VERSION ${PROJECT_VERSION} SOVERSION ${MADENGINE_SOVERSION} EXPORT_NAME madengine
  LINKER_LANGUAGE CXX LINK_DEPENDS ${madengine_map})
target_link_libraries(madengine_shared PRIVATE ${madengine_deps})
target_link_options(madengine_shared PRIVATE -Wl,--version-script=${madengine_map} -Wl,--no-undefined -Wl,--as-needed)

add_library(madengine_static STATIC ${madengine_objects})
set_target_properties(madengine_static PROPERTIES OUTPUT_NAME madengine EXPORT_NAME madengine_static LINKER_LANGUAGE CXX)
# The C++ runtime is named too: a C program links the archive with the C
# linker, which adds no libstdc++ of its own.
target_link_libraries(madengine_static INTERFACE
  "$<BUILD_INTERFACE:${madengine_deps}>" "$<INSTALL_INTERFACE:${madengine_deps_installed}>" stdc++ m)

foreach(t madengine_shared madengine_static)
  target_include_directories(${t} INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                            $<BUILD_INTERFACE:${MADENGINE_GENERATED_INCLUDE}>
                                            $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endforeach()
add_library(madengine::madengine ALIAS madengine_shared)
add_library(madengine::madengine_static ALIAS madengine_static)

# ---- install: lib (the .so), dev (headers, .so link, .a, package files), daemon (tools) ----
install(TARGETS madengine_shared EXPORT madengineTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib NAMELINK_COMPONENT dev)
install(TARGETS madengine_static EXPORT madengineTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/madengine DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
  FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")
install(FILES ${MADENGINE_GENERATED_INCLUDE}/madengine/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/madengine
  COMPONENT dev)

set(madengine_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/madengine)
install(EXPORT madengineTargets NAMESPACE madengine:: DESTINATION ${madengine_cmake_dir} COMPONENT dev)
include(CMakePackageConfigHelpers)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/madengineConfig.cmake.in
  ${PROJECT_BINARY_DIR}/madengineConfig.cmake INSTALL_DESTINATION ${madengine_cmake_dir})
# The major version is the ABI (CMakeLists.txt): any 2.x satisfies find_package(madengine 2).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/madengineConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/madengineConfig.cmake ${PROJECT_BINARY_DIR}/madengineConfigVersion.cmake
  DESTINATION ${madengine_cmake_dir} COMPONENT dev)

# madengine.pc names the prefix it is installed under (cmake --install
# --prefix, or /usr in the packages), so it is written at install time.
install(CODE "
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  set(CMAKE_INSTALL_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(CMAKE_INSTALL_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(madengine_pc_private \"${madengine_pc_private}\")
  set(pc \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig/madengine.pc\")
  message(STATUS \"Installing: \${pc}\")
  configure_file(\"${CMAKE_CURRENT_LIST_DIR}/madengine.pc.in\" \"\${pc}\" @ONLY)
" COMPONENT dev)

install(TARGETS madengine madengine-ctl madstorm madstorm-embedded madwire RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT daemon)
install(FILES ${PROJECT_SOURCE_DIR}/config/madengine.toml DESTINATION ${CMAKE_INSTALL_DATADIR}/madengine COMPONENT daemon)
