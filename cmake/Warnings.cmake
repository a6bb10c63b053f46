# One warning set for every target of the project (g++ 12 and clang 14 both stay quiet).
add_library(madengine_warnings INTERFACE)
target_compile_options(madengine_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wno-missing-field-initializers)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # g++ 12 at -O3 reports -Wrestrict inside libstdc++'s std::string operator+
  # (GCC bug 105329): a false positive.
  target_compile_options(madengine_warnings INTERFACE -Wno-restrict)
endif()
if(MADENGINE_WERROR)
  target_compile_options(madengine_warnings INTERFACE -Werror)
endif()
