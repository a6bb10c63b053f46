# Every external dependency, found once here. scripts/deps.sh installs them on Debian 12.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)

pkg_check_modules(IBUMAD REQUIRED IMPORTED_TARGET libibumad)
pkg_check_modules(IBVERBS REQUIRED IMPORTED_TARGET libibverbs)
pkg_check_modules(MLX5 IMPORTED_TARGET libmlx5)
include(CheckIncludeFileCXX)
check_include_file_cxx(infiniband/mlx5dv.h MADENGINE_HAVE_MLX5DV)

find_package(Boost 1.74 REQUIRED)
if(MADENGINE_BUILD_TESTS)
  pkg_check_modules(IBMAD REQUIRED IMPORTED_TARGET libibmad)  # the independent decoder the wire tests compare with
  find_package(GTest REQUIRED)
  find_package(benchmark REQUIRED)
endif()
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(nlohmann_json REQUIRED)
pkg_check_modules(TOMLPP REQUIRED IMPORTED_TARGET tomlplusplus)
pkg_check_modules(CLI11 REQUIRED IMPORTED_TARGET CLI11)
# The daemon as a service: the metrics endpoint's HTTP server and systemd's
# notification protocol (sd_notify).
pkg_check_modules(MICROHTTPD REQUIRED IMPORTED_TARGET libmicrohttpd)
pkg_check_modules(LIBSYSTEMD REQUIRED IMPORTED_TARGET libsystemd)

# Ring backend: DPDK rte_ring (used without EAL on our own memory) or Boost.Lockfree.
set(MADENGINE_RING "boost")
if(NOT MADENGINE_RING_BACKEND STREQUAL "boost")
  find_path(RTE_RING_INCLUDE rte_ring.h PATH_SUFFIXES dpdk)
  # rte_config.h sits in the multiarch include dir on Debian.
  find_path(RTE_CONFIG_INCLUDE rte_config.h PATH_SUFFIXES dpdk ${CMAKE_LIBRARY_ARCHITECTURE}/dpdk)
  find_library(RTE_RING_LIB rte_ring)
  find_library(RTE_EAL_LIB rte_eal)
  if(RTE_RING_INCLUDE AND RTE_CONFIG_INCLUDE AND RTE_RING_LIB)
    set(MADENGINE_RING "dpdk")
    set(RTE_RING_INCLUDES ${RTE_RING_INCLUDE} ${RTE_CONFIG_INCLUDE})
  elseif(MADENGINE_RING_BACKEND STREQUAL "dpdk")
    message(FATAL_ERROR "MADENGINE_RING_BACKEND=dpdk but rte_ring was not found (apt-get install libdpdk-dev)")
  endif()
endif()
message(STATUS "madengine ring backend: ${MADENGINE_RING}")
message(STATUS "madengine mlx5dv headers: ${MADENGINE_HAVE_MLX5DV}")
