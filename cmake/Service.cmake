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

install(FILES ${PROJECT_SOURCE_DIR}/docs/man/madstorm.1
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT daemon)
install(FILES ${PROJECT_SOURCE_DIR}/docs/man/madengine.8 ${PROJECT_SOURCE_DIR}/docs/man/madengine-ctl.8
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man8 COMPONENT daemon)
