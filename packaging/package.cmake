# The Debian package (scripts/package runs cpack -G DEB on the build directory).
#
# The package installs under /usr (CPack's packaging prefix), whatever CMAKE_INSTALL_PREFIX the
# build directory has, so the developer build is reused as it is. The programs find their data
# next to themselves (bin/../share/kforge). What only the package ships (the configuration with
# the system paths, the unit, sysusers.d and tmpfiles.d) is the `deb` component, left out of a
# plain `cmake --install`.

set(KFORGE_PKG_DIR "${CMAKE_BINARY_DIR}/packaging")

# /etc/kforge/kforge.yaml: config/kforge.yaml with the system paths.
file(READ "${CMAKE_SOURCE_DIR}/config/kforge.yaml" _yaml)
foreach(pair
    "  path: kforge.db|  path: /var/lib/kforge/kforge.db"
    "  triton_cache_dir: \"\"|  triton_cache_dir: /var/cache/kforge/triton")
  string(REPLACE "|" ";" pair "${pair}")
  list(GET pair 0 _from)
  list(GET pair 1 _to)
  string(FIND "${_yaml}" "${_from}" _at)
  if(_at EQUAL -1)
    message(FATAL_ERROR "config/kforge.yaml: '${_from}' not found (packaging/package.cmake)")
  endif()
  string(REPLACE "${_from}" "${_to}" _yaml "${_yaml}")
endforeach()
file(WRITE "${KFORGE_PKG_DIR}/kforge.yaml" "${_yaml}")
configure_file("${CMAKE_SOURCE_DIR}/config/kforge.yaml" "${KFORGE_PKG_DIR}/.kforge.yaml.stamp"
  COPYONLY)  # re-run cmake when the source changes

# /lib/systemd/system/kforged.service: config/kforged.service with the packaged binary.
file(READ "${CMAKE_SOURCE_DIR}/config/kforged.service" _unit)
string(FIND "${_unit}" "ExecStart=/usr/local/bin/kforged" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "config/kforged.service: no ExecStart=/usr/local/bin/kforged")
endif()
string(REPLACE "ExecStart=/usr/local/bin/kforged" "ExecStart=/usr/bin/kforged" _unit "${_unit}")
string(REGEX REPLACE "^# kforged under systemd[^\n]*\n#[^\n]*\n" "# kforged under systemd, as the kforge package installs it (docs/OPERATIONS.md).\n"
  _unit "${_unit}")
file(WRITE "${KFORGE_PKG_DIR}/kforged.service" "${_unit}")
configure_file("${CMAKE_SOURCE_DIR}/config/kforged.service" "${KFORGE_PKG_DIR}/.kforged.service.stamp"
  COPYONLY)

install(FILES "${KFORGE_PKG_DIR}/kforge.yaml" DESTINATION /etc/kforge
  COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES "${KFORGE_PKG_DIR}/kforged.service" DESTINATION /lib/systemd/system
  COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES packaging/systemd/kforge.sysusers DESTINATION lib/sysusers.d RENAME kforge.conf
  COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES packaging/systemd/kforge.tmpfiles DESTINATION lib/tmpfiles.d RENAME kforge.conf
  COMPONENT deb EXCLUDE_FROM_ALL)
# Manual pages, gzip -9n as Debian wants them.
foreach(page kforge.1 kforge-fake-llm.1 kforged.8)
  string(REGEX REPLACE ".*\\.([0-9])$" "\\1" _section "${page}")
  execute_process(COMMAND gzip -9nc "${CMAKE_SOURCE_DIR}/packaging/man/${page}"
    OUTPUT_FILE "${KFORGE_PKG_DIR}/${page}.gz" RESULT_VARIABLE _gz)
  if(NOT _gz EQUAL 0)
    message(FATAL_ERROR "gzip packaging/man/${page} failed")
  endif()
  configure_file("packaging/man/${page}" "${KFORGE_PKG_DIR}/.${page}.stamp" COPYONLY)
  install(FILES "${KFORGE_PKG_DIR}/${page}.gz" DESTINATION ${CMAKE_INSTALL_MANDIR}/man${_section}
    COMPONENT deb EXCLUDE_FROM_ALL)
endforeach()

# The fake provider's pipeline script, to try the package without a provider.
install(FILES apps/kforge-fake-llm/examples/pipeline.yaml DESTINATION ${CMAKE_INSTALL_DATADIR}/kforge/examples
  RENAME fake-llm-pipeline.yaml)
install(FILES README.md docs/OPERATIONS.md DESTINATION ${CMAKE_INSTALL_DOCDIR}
  COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES packaging/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR}
  COMPONENT deb EXCLUDE_FROM_ALL)
# Debian wants the changelog compressed with gzip -9n (no timestamp).
execute_process(COMMAND gzip -9nc "${CMAKE_SOURCE_DIR}/packaging/debian/changelog"
  OUTPUT_FILE "${KFORGE_PKG_DIR}/changelog.Debian.gz" RESULT_VARIABLE _gz)
if(NOT _gz EQUAL 0)
  message(FATAL_ERROR "gzip packaging/debian/changelog failed")
endif()
configure_file(packaging/debian/changelog "${KFORGE_PKG_DIR}/.changelog.stamp" COPYONLY)
install(FILES "${KFORGE_PKG_DIR}/changelog.Debian.gz" DESTINATION ${CMAKE_INSTALL_DOCDIR}
  COMPONENT deb EXCLUDE_FROM_ALL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kforge)
set(CPACK_PACKAGE_VENDOR kforge)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(KFORGE_PACKAGE_MAINTAINER "kforge maintainers <kforge@localhost>" CACHE STRING
  "The Debian package's Maintainer field (also in packaging/debian/changelog)")
set(CPACK_PACKAGE_CONTACT "${KFORGE_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "turns Triton GPU kernels into verified training samples")
# The extended description (CPack indents each line; the synopsis is the summary above).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "kforged is a daemon that runs an LLM pipeline over a corpus of Triton
kernels, checkpoints every stage in SQLite and verifies the generated
samples in a sandboxed Python verifier pool. kforge is its command-line
tool (import, runs, status, compare, export), and kforge-fake-llm a
scriptable OpenAI-compatible test server.")
# DESTDIR staging, so that the absolute destinations (/etc, /lib/systemd) land in the package,
# with /usr as the prefix whatever the build directory's CMAKE_INSTALL_PREFIX.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_COMPONENTS_ALL Unspecified deb)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/kforge/kforge")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The verifier's harness runs on python3; passwd for the maintainer scripts (useradd where
# systemd-sysusers is missing); sqlite3 for backups.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3, passwd")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS sqlite3)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  "${CMAKE_SOURCE_DIR}/packaging/debian/conffiles;${CMAKE_SOURCE_DIR}/packaging/debian/postinst;${CMAKE_SOURCE_DIR}/packaging/debian/prerm;${CMAKE_SOURCE_DIR}/packaging/debian/postrm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# cpack (and `make install`) would otherwise build the whole tree, tests and benchmarks
# included, first: scripts/package builds the three programs the package holds.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
include(CPack)
