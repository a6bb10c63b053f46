# Debian packages from the install components (`cpack -G DEB` in a build
# tree, see scripts/package.sh): madengine (the daemon, madstorm, madwire,
# the example configuration), libmadengine2 (libmadengine.so.2) and
# libmadengine-dev (headers, libmadengine.a, the .so link, the CMake package,
# madengine.pc and the example vendor SM). Runtime dependencies come from
# dpkg-shlibdeps.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME madengine)
set(CPACK_PACKAGE_VENDOR "madengine")
set(CPACK_PACKAGE_CONTACT "madengine maintainers <madengine@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "InfiniBand subnet manager and subnet administrator engine")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL daemon lib dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)  # the build tree keeps the debug info
set(CPACK_DEBIAN_PACKAGE_SECTION net)

set(CPACK_DEBIAN_DAEMON_PACKAGE_NAME madengine)
set(CPACK_COMPONENT_DAEMON_DESCRIPTION
  "madengine daemon (SM + SA) with its systemd unit, madengine-ctl, madstorm SA load tool and madwire MAD decoder")
# /etc/madengine/madengine.toml and the logrotate snippet are the operator's
# to edit: dpkg keeps their changes on upgrade.
set(CPACK_DEBIAN_DAEMON_PACKAGE_CONTROL_EXTRA "${PROJECT_SOURCE_DIR}/dist/debian/conffiles;${PROJECT_SOURCE_DIR}/dist/debian/postinst")
set(CPACK_DEBIAN_DAEMON_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_LIB_PACKAGE_NAME libmadengine${MADENGINE_SOVERSION})
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_LIB_DESCRIPTION "madengine library: a node (SM + SA + HA) a vendor SM embeds")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libmadengine-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libmadengine${MADENGINE_SOVERSION} (= ${PROJECT_VERSION})")
# libmadengine.a needs these to link (pkg-config --static, madengine::madengine_static).
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS "libibumad-dev, libibverbs-dev, libtomlplusplus-dev, libspdlog-dev, libfmt-dev, libdpdk-dev")
set(CPACK_COMPONENT_DEV_DESCRIPTION
  "madengine development files: headers (C ABI and C++ API), static library, CMake package, pkg-config file")

include(CPack)
