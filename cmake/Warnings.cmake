# One warning set for every target of the project (g++ 12 and clang 14 both stay quiet).
add_library(madengine_warnings INTERFACE)
target_compile_options(madengine_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wno-missing-field-initializers)
if(MADENGINE_WERROR)
  target_compile_options(madengine_warnings INTERFACE -Werror)
endif()
