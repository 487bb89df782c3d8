//===- LayeringCheck.cpp - main of the <library>-layering executables -----===//
//
// Each compiler library is linked whole (--whole-archive) into an
// executable of this one function, with only the libraries it declares in
// CMake: a reference to a layer above (or beside) it is an undefined
// symbol, so the build fails. Never run.
//
//===----------------------------------------------------------------------===//
int main() { return 0; }
