# The project's version, from project(VERSION) alone: a generated header
# (madengine_version.h) that me_version() and the tools' --version read, so
# no second copy of the number is kept by hand.
configure_file(${CMAKE_CURRENT_LIST_DIR}/madengine_version.h.in ${PROJECT_BINARY_DIR}/generated/madengine_version.h @ONLY)
add_library(madengine_version INTERFACE)
target_include_directories(madengine_version INTERFACE $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/generated>)
