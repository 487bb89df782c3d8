# Writes the file IN as a C++ raw string literal into OUT. Every line
# `#include "attnc/runtime/NAME.def"` (or NAME.inc) is replaced by the text
# of that file (in DEFDIR), and so are the includes of what it brings in:
# the embedded text stands on its own.
file(READ ${IN} content)
set(dir ${DEFDIR})
foreach(depth RANGE 4)
  string(REGEX MATCHALL "#include \"attnc/runtime/[a-z_]+\\.(def|inc)\"" incs "${content}")
  if(NOT incs)
    break()
  endif()
  list(REMOVE_DUPLICATES incs)
  foreach(inc IN LISTS incs)
    string(REGEX REPLACE "#include \"attnc/runtime/([a-z_]+\\.(def|inc))\"" "\\1" def "${inc}")
    file(READ ${dir}/${def} text)
    string(REPLACE "${inc}" "${text}" content "${content}")
  endforeach()
endforeach()
string(REGEX MATCHALL "#include \"attnc/runtime/[a-z_]+\\.(def|inc)\"" incs "${content}")
if(incs)
  message(FATAL_ERROR "${IN}: includes nested deeper than 5 levels")
endif()
file(WRITE ${OUT} "R\"ATTNC_EMBED(${content})ATTNC_EMBED\"\n")
