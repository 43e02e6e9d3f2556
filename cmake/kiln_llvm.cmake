# The LLVM libraries kiln_codegen links (the only layer that links LLVM),
# plus LLD's ELF linker, which codegen/lld_link.cpp runs in-process to link
# kernels into shared objects. Included by CMakeLists.txt after
# find_package(LLVM 14 CONFIG); sets KILN_LLVM_LIBS.
#
# Default (what CI builds and scripts/bundle.sh ships): LLVM and LLD linked
# statically, only the components kiln uses and only the backends in
# KILN_LLVM_TARGETS, so that the kiln binary needs no LLVM, LLD, z3, libxml2,
# ICU, libedit or libtinfo shared library at run time.
#
# -DKILN_LLVM_SHARED=ON links Debian's libLLVM-14.so instead (every backend;
# links of the ~35 test executables are faster). Such a build needs the
# libllvm14 package at run time and cannot be bundled.

option(KILN_LLVM_SHARED "Link Debian's shared libLLVM-14 (dev builds) instead of static LLVM components" OFF)

# The LLVM backends linked into kiln: the host's (X86), the cross targets of
# kiln's tests and docs (AArch64, RISCV) and the other CPU architectures that
# run Linux shared objects (ARM, PowerPC). kiln's GPU path is CUDA C + NVRTC,
# not LLVM's NVPTX. "all" links every backend of Debian's LLVM (19). Measured
# (stripped kiln, its xz -6 size): X86 only 48.2 MB / 12.7 MB; this list
# 69.8 / 15.8; all 99.5 / 20.0 (and +30 MB per test executable). A triple of
# a backend left out is a user error that says so (codegen/llvm_support.cpp).
set(KILN_LLVM_TARGETS "X86;AArch64;ARM;RISCV;PowerPC" CACHE STRING
    "LLVM backends linked into kiln (';'-separated LLVM target names, or 'all'); ignored with KILN_LLVM_SHARED")

# LLD's ELF driver: static archives from Debian's liblld-14-dev. Its imported
# CMake targets (LLDConfig.cmake) link the shared libLLVM, so they are not used.
find_path(KILN_LLD_INCLUDE_DIR lld/Common/Driver.h PATHS ${LLVM_INCLUDE_DIRS} NO_DEFAULT_PATH)
find_library(KILN_LLD_ELF_LIB NAMES liblldELF.a PATHS ${LLVM_LIBRARY_DIRS} NO_DEFAULT_PATH)
find_library(KILN_LLD_COMMON_LIB NAMES liblldCommon.a PATHS ${LLVM_LIBRARY_DIRS} NO_DEFAULT_PATH)
if(NOT KILN_LLD_INCLUDE_DIR OR NOT KILN_LLD_ELF_LIB OR NOT KILN_LLD_COMMON_LIB)
  message(FATAL_ERROR "LLD's ELF linker library not found under ${LLVM_LIBRARY_DIRS} "
                      "(install Debian's liblld-14-dev; scripts/setup.sh does)")
endif()

if(KILN_LLVM_SHARED)
  set(_kiln_llvm_link LLVM)
  set(_kiln_lld_deps LLVM)
  message(STATUS "kiln: linking the shared libLLVM-14 (KILN_LLVM_SHARED=ON)")
else()
  if(KILN_LLVM_TARGETS STREQUAL "all")
    set(_kiln_targets ${LLVM_TARGETS_TO_BUILD})
  else()
    set(_kiln_targets ${KILN_LLVM_TARGETS})
    foreach(t ${_kiln_targets})
      if(NOT t IN_LIST LLVM_TARGETS_TO_BUILD)
        message(FATAL_ERROR "KILN_LLVM_TARGETS: '${t}' is not one of LLVM's targets (${LLVM_TARGETS_TO_BUILD})")
      endif()
    endforeach()
    if(NOT "X86" IN_LIST _kiln_targets)
      message(FATAL_ERROR "KILN_LLVM_TARGETS must include X86 (the host backend: JIT and host objects)")
    endif()
  endif()

  # What codegen/ uses: IR building and verification, the new pass manager's
  # O3 pipeline (passes), machine-code emission (codegen + the backends'
  # CodeGen/AsmPrinter/AsmParser/Desc/Info, as llvm_support.cpp initializes
  # them), ORC's LLJIT (orcjit), archives (object). LLD's ELF driver adds
  # lto (it can link bitcode), option, debuginfodwarf, bitwriter.
  llvm_map_components_to_libnames(_kiln_llvm_link
    core support analysis target mc mcparser object irreader codegen passes orcjit
    ${_kiln_targets})
  llvm_map_components_to_libnames(_kiln_lld_deps
    binaryformat bitwriter core debuginfodwarf demangle lto mc object option passes support codegen target)

  # Debian's LLVMSupport names libz3.so (only the SMT solver API, which kiln
  # never calls), the shared zlib and the shared libtinfo (terminal colors) as
  # link dependencies. Use the static zlib and libtinfo, and drop z3: the
  # binary then needs neither at run time.
  find_library(KILN_STATIC_ZLIB NAMES libz.a)
  find_library(KILN_STATIC_TINFO NAMES libtinfo.a)
  if(TARGET LLVMSupport)
    get_target_property(_support_deps LLVMSupport INTERFACE_LINK_LIBRARIES)
    set(_support_fixed)
    foreach(d ${_support_deps})
      if(d MATCHES "z3")
        continue()
      elseif(d STREQUAL "ZLIB::ZLIB" AND KILN_STATIC_ZLIB)
        list(APPEND _support_fixed ${KILN_STATIC_ZLIB})
      elseif(d STREQUAL "Terminfo::terminfo" AND KILN_STATIC_TINFO)
        list(APPEND _support_fixed ${KILN_STATIC_TINFO})
      else()
        list(APPEND _support_fixed ${d})
      endif()
    endforeach()
    set_property(TARGET LLVMSupport PROPERTY INTERFACE_LINK_LIBRARIES ${_support_fixed})
  endif()
  # LLVMExtensions (LTO's static pass plug-ins) names Polly, which Debian ships
  # only as a loadable plug-in (LLVMPolly.so, no libPolly.a). kiln never runs
  # LTO; the stub file below defines the one symbol it needs.
  if(TARGET LLVMExtensions)
    set_property(TARGET LLVMExtensions PROPERTY INTERFACE_LINK_LIBRARIES LLVMSupport)
  endif()
  if(TARGET LLVMWindowsManifest)  # libxml2, never pulled by kiln's components; keep it out regardless
    set_property(TARGET LLVMWindowsManifest PROPERTY INTERFACE_LINK_LIBRARIES LLVMSupport)
  endif()

  # LLD's driver calls InitializeAllTargets() & co. (for LTO, which kiln never
  # uses: it links ELF objects only). For the backends left out, empty
  # initializers satisfy those references; they register nothing, so
  # TargetRegistry only knows the linked backends.
  set(_stub_src ${CMAKE_BINARY_DIR}/generated/kiln_llvm_target_stubs.cpp)
  set(_stub_text "// Generated by cmake/kiln_llvm.cmake: no-op initializers of the LLVM backends\n// that are not linked (KILN_LLVM_TARGETS=${KILN_LLVM_TARGETS}).\n")
  string(APPEND _stub_text "\n#include <llvm/Passes/PassPlugin.h>\n\n"
    "// LTO's pipeline (LLVMLTO, linked for LLD) registers Polly's passes; Debian's\n"
    "// Polly is a plug-in only. kiln never runs LTO: register nothing.\n"
    "llvm::PassPluginLibraryInfo getPollyPluginInfo() {\n"
    "  return {LLVM_PLUGIN_API_VERSION, \"Polly (not linked)\", \"\", [](llvm::PassBuilder&) {}};\n}\n\n")
  set(_stub_count 0)
  foreach(t ${LLVM_TARGETS_TO_BUILD})
    if(NOT t IN_LIST _kiln_targets)
      foreach(part Target TargetInfo TargetMC AsmPrinter AsmParser Disassembler TargetMCA)
        string(APPEND _stub_text "extern \"C\" void LLVMInitialize${t}${part}() {}\n")
      endforeach()
      math(EXPR _stub_count "${_stub_count} + 1")
    endif()
  endforeach()
  if(EXISTS ${_stub_src})
    file(READ ${_stub_src} _old_stub_text)
  endif()
  if(NOT _old_stub_text STREQUAL _stub_text)
    file(WRITE ${_stub_src} "${_stub_text}")
  endif()
  add_library(kiln_llvm_target_stubs STATIC ${_stub_src})
  target_include_directories(kiln_llvm_target_stubs SYSTEM PRIVATE ${LLVM_INCLUDE_DIRS})
  list(APPEND _kiln_lld_deps kiln_llvm_target_stubs)
  list(JOIN _kiln_targets ", " _targets_msg)
  message(STATUS "kiln: static LLVM with backends ${_targets_msg} (${_stub_count} left out; KILN_LLVM_TARGETS)")
endif()

add_library(kiln_lld_common STATIC IMPORTED)
set_target_properties(kiln_lld_common PROPERTIES IMPORTED_LOCATION ${KILN_LLD_COMMON_LIB}
                                                 INTERFACE_LINK_LIBRARIES "${_kiln_lld_deps}")
add_library(kiln_lld_elf STATIC IMPORTED)
set_target_properties(kiln_lld_elf PROPERTIES IMPORTED_LOCATION ${KILN_LLD_ELF_LIB}
                                              INTERFACE_LINK_LIBRARIES "kiln_lld_common;${_kiln_lld_deps}")

# One interface target for kiln_codegen: LLD's headers (lld/Common/Driver.h)
# and the libraries. lld_link.cpp includes them as system headers.
add_library(kiln_llvm INTERFACE)
target_include_directories(kiln_llvm SYSTEM INTERFACE ${KILN_LLD_INCLUDE_DIR} ${LLVM_INCLUDE_DIRS})
target_link_libraries(kiln_llvm INTERFACE kiln_lld_elf ${_kiln_llvm_link})
if(TARGET kiln_llvm_target_stubs)
  target_link_libraries(kiln_llvm INTERFACE kiln_llvm_target_stubs)
endif()
set(KILN_LLVM_LIBS kiln_llvm)
