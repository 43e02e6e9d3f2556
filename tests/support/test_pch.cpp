// The program that builds the test files' shared precompiled header
// (kiln_test_pch in tests/CMakeLists.txt); it does nothing.
int main() { return 0; }
