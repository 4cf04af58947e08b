# Compile options shared by every hetsgd target, as one INTERFACE target (no global flags).
add_library(hetsgd_options INTERFACE)
target_compile_options(hetsgd_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${HETSGD_WERROR}>>:-Werror>)
if(HETSGD_SANITIZE)
  string(REPLACE ";" "," _san "${HETSGD_SANITIZE}")
  target_compile_options(hetsgd_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${_san} -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
  target_link_options(hetsgd_options INTERFACE -fsanitize=${_san})
endif()
