# Extra build types: Asan (AddressSanitizer + UndefinedBehaviorSanitizer) and Tsan.
# Release and Debug are CMake's own. The sanitizer builds carry line tables
# only (-g1): their reports need no more, and full debug info costs a third
# of the compile time. Fuzz targets are a separate option (MADENGINE_FUZZ, clang only).
set(CMAKE_CXX_FLAGS_ASAN "-O1 -g1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined")
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # g++ 12 at -O1 with sanitizers reports maybe-uninitialized inside
  # libstdc++'s <regex> and <functional>: false positives that -Werror would
  # turn into a broken build.
  string(APPEND CMAKE_CXX_FLAGS_ASAN " -Wno-maybe-uninitialized")
endif()
set(CMAKE_C_FLAGS_ASAN "${CMAKE_CXX_FLAGS_ASAN}")
set(CMAKE_EXE_LINKER_FLAGS_ASAN "-fsanitize=address,undefined")
set(CMAKE_SHARED_LINKER_FLAGS_ASAN "-fsanitize=address,undefined")
set(CMAKE_CXX_FLAGS_TSAN "-O1 -g1 -fsanitize=thread -fno-omit-frame-pointer")
set(CMAKE_C_FLAGS_TSAN "${CMAKE_CXX_FLAGS_TSAN}")
set(CMAKE_EXE_LINKER_FLAGS_TSAN "-fsanitize=thread")
set(CMAKE_SHARED_LINKER_FLAGS_TSAN "-fsanitize=thread")
if(MADENGINE_FUZZ AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "MADENGINE_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
endif()
if(MADENGINE_FUZZ)
  # Every library is instrumented for coverage and sanitizers, so fuzzers
  # explore the decoders they call, not only their own file.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# Folders whose objects are not in libmadengine (tests, benchmarks, tools)
# carry line tables only: backtraces, sanitizer reports and profiles need no
# more, and full debug information is about a third of their compile time.
# The library keeps the build type's -g: the ABI check reads its DWARF.
macro(madengine_line_tables_only)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    add_compile_options(-g1)
  endif()
endmacro()
