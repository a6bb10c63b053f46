# The project's version, from project(VERSION) alone: generated headers that
# me_version(), the C ABI's ME_VERSION_* macros (madengine/version.h, public)
# and the tools' --version (madengine_version.h) read, so no second copy of
# the number is kept by hand.
configure_file(${CMAKE_CURRENT_LIST_DIR}/madengine_version.h.in ${PROJECT_BINARY_DIR}/generated/madengine_version.h @ONLY)
set(MADENGINE_GENERATED_INCLUDE ${PROJECT_BINARY_DIR}/generated/include)
configure_file(${CMAKE_CURRENT_LIST_DIR}/version.h.in ${MADENGINE_GENERATED_INCLUDE}/madengine/version.h @ONLY)
# madengine_version_header: madengine/version.h, for what includes
# madengine/madengine.h (the C ABI's sources and users); madengine_version:
# madengine_version.h too, for the tools.
add_library(madengine_version_header INTERFACE)
target_include_directories(madengine_version_header INTERFACE $<BUILD_INTERFACE:${MADENGINE_GENERATED_INCLUDE}>)
add_library(madengine_version INTERFACE)
target_include_directories(madengine_version INTERFACE $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/generated>)
target_link_libraries(madengine_version INTERFACE madengine_version_header)
