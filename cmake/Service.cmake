# The daemon as an operator installs it (component daemon, the madengine
# .deb): the systemd unit, the configuration in /etc, the logrotate snippet
# and the man pages. The unit names the binary and configuration paths of
# the prefix it is installed under, and /etc is the system's only for the
# /usr prefix (the packages; GNUInstallDirs' rule), so both are decided at
# install time, like madengine.pc.
install(CODE "
  if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
    set(sysconfdir /etc)
  else()
    set(sysconfdir \"\${CMAKE_INSTALL_PREFIX}/etc\")
  endif()
  set(BINDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}\")
  set(SYSCONFDIR \"\${sysconfdir}\")
  set(unit \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/systemd/system/madengine.service\")
  message(STATUS \"Installing: \${unit}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/dist/systemd/madengine.service.in\" \"\${unit}\" @ONLY)
  # file(INSTALL) puts DESTDIR in front itself (configure_file does not).
  file(INSTALL \"${PROJECT_SOURCE_DIR}/config/madengine.toml\" DESTINATION \"\${sysconfdir}/madengine\")
  file(INSTALL \"${PROJECT_SOURCE_DIR}/dist/logrotate/madengine\" DESTINATION \"\${sysconfdir}/logrotate.d\")
" COMPONENT daemon)

# Manual pages are installed gzip-compressed, as Debian policy (12.1) asks
# of a package (-n: no name or time stamp, the same bytes every build).
find_program(GZIP_PROGRAM gzip REQUIRED)
set(man_gz)
foreach(page madstorm.1 madengine.8 madengine-ctl.8)
  set(out ${PROJECT_BINARY_DIR}/man/${page}.gz)
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
    COMMAND ${GZIP_PROGRAM} -9 -n -c ${PROJECT_SOURCE_DIR}/docs/man/${page} > ${out}
    DEPENDS ${PROJECT_SOURCE_DIR}/docs/man/${page})
  list(APPEND man_gz ${out})
endforeach()
add_custom_target(man_gz ALL DEPENDS ${man_gz})
install(FILES ${PROJECT_BINARY_DIR}/man/madstorm.1.gz
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT daemon)
install(FILES ${PROJECT_BINARY_DIR}/man/madengine.8.gz ${PROJECT_BINARY_DIR}/man/madengine-ctl.8.gz
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man8 COMPONENT daemon)
