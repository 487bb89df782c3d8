# Writes the file IN as a C++ raw string literal into OUT. Every line
# `#include "attnc/runtime/NAME.def"` is replaced by the text of that file
# (in DEFDIR): the embedded text stands on its own.
file(READ ${IN} content)
set(dir ${DEFDIR})
string(REGEX MATCHALL "#include \"attnc/runtime/[a-z_]+\\.def\"" incs "${content}")
foreach(inc IN LISTS incs)
  string(REGEX REPLACE "#include \"attnc/runtime/([a-z_]+\\.def)\"" "\\1" def "${inc}")
  file(READ ${dir}/${def} text)
  string(REPLACE "${inc}" "${text}" content "${content}")
endforeach()
file(WRITE ${OUT} "R\"ATTNC_EMBED(${content})ATTNC_EMBED\"\n")
