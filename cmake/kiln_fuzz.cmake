# Fuzz targets (fuzz/, issue 12). Included by the top-level CMakeLists.txt
# after the layer libraries are defined.
#
#   KILN_FUZZ=OFF (default, any compiler, what CI builds): every target
#     fuzz/<name>.cpp is built with fuzz/replay_main.cpp into the plain
#     executable fuzz-replay-<name>, and the ctest test fuzz:<name> replays
#     its seed corpus (fuzz/corpus/<name>/) and its regression inputs
#     (tests/fuzz_regressions/<name>/) through it.
#   KILN_FUZZ=ON (clang only): every target is a libFuzzer executable
#     fuzz-<name> (-fsanitize=fuzzer,address,undefined), and fuzz:<name>
#     runs the same inputs through it (-runs=0). Instrument the libraries
#     too by configuring the build directory with
#       CC=clang-14 CXX=clang++-14 cmake -G Ninja -DKILN_FUZZ=ON \
#         -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fsanitize=fuzzer-no-link" ...
#     then e.g.  ./fuzz-workload -max_total_time=600 corpus-dir ../fuzz/corpus/workload
#     (fuzz/README.md-style notes are at the top of each target).
option(KILN_FUZZ "build libFuzzer targets (needs clang)" OFF)

set(KILN_FUZZ_DIR ${CMAKE_SOURCE_DIR}/fuzz)
set(KILN_FUZZ_TARGETS workload config_json jsonl_import measure_request onnx_model)
# The layers each target needs (only onnx_model needs codegen/LLVM: the graph
# layer sits above every other).
set(KILN_FUZZ_LIBS_workload kiln_kernels)
set(KILN_FUZZ_LIBS_config_json kiln_kernels)
set(KILN_FUZZ_LIBS_measure_request kiln_rpc)
set(KILN_FUZZ_LIBS_onnx_model kiln_graph)
# The layer whose include rules each target follows.
set(KILN_FUZZ_LAYER_workload kernels)
set(KILN_FUZZ_LAYER_config_json kernels)
set(KILN_FUZZ_LAYER_jsonl_import tuner)
set(KILN_FUZZ_LAYER_measure_request rpc)
set(KILN_FUZZ_LAYER_onnx_model graph)
# The tuning database lives in kiln_tuner, which links codegen (LLVM) and
# costmodel (XGBoost): the libFuzzer target compiles the database's own
# sources instead (they need schedule/ and runtime/ only), so that
# jsonl_import needs no LLVM built with the fuzzer's instrumentation. The
# replay links kiln_tuner: compiling those sources twice was about 110 s
# of CI's build.
set(KILN_FUZZ_DB_SRCS ${CMAKE_SOURCE_DIR}/tuner/database.cpp ${CMAKE_SOURCE_DIR}/tuner/database_jsonl.cpp
                      ${CMAKE_SOURCE_DIR}/tuner/database_sqlite.cpp)

if(KILN_FUZZ AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "KILN_FUZZ=ON needs clang (libFuzzer): configure with CC=clang-14 CXX=clang++-14")
endif()

enable_testing()  # fuzz:<name> tests (enable_testing is idempotent)
foreach(name ${KILN_FUZZ_TARGETS})
  set(src ${KILN_FUZZ_DIR}/${name}.cpp)
  kiln_check_includes(${KILN_FUZZ_LAYER_${name}} ${src})
  if(KILN_FUZZ)
    set(exe fuzz-${name})
    add_executable(${exe} ${src})
    set(flags -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
    target_compile_options(${exe} PRIVATE ${flags})
    target_compile_definitions(${exe} PRIVATE KILN_FUZZ_LIBFUZZER)  # fuzz/fuzz_common.h: fatal UBSan reports
    target_link_options(${exe} PRIVATE ${flags})
  else()
    set(exe fuzz-replay-${name})
    add_executable(${exe} ${src} ${KILN_FUZZ_DIR}/replay_main.cpp)
  endif()
  target_include_directories(${exe} PRIVATE ${CMAKE_SOURCE_DIR})
  target_compile_options(${exe} PRIVATE ${KILN_WARNINGS})
  target_link_libraries(${exe} PRIVATE ${KILN_FUZZ_LIBS_${name}})
  if(name STREQUAL "jsonl_import" AND KILN_FUZZ)
    target_sources(${exe} PRIVATE ${KILN_FUZZ_DB_SRCS})
    target_link_libraries(${exe} PRIVATE kiln_schedule kiln_runtime sqlite3 nlohmann_json::nlohmann_json)
  elseif(name STREQUAL "jsonl_import")
    target_link_libraries(${exe} PRIVATE kiln_tuner nlohmann_json::nlohmann_json)
  endif()

  set(inputs)
  if(EXISTS ${KILN_FUZZ_DIR}/corpus/${name})
    list(APPEND inputs ${KILN_FUZZ_DIR}/corpus/${name})
  endif()
  if(EXISTS ${CMAKE_SOURCE_DIR}/tests/fuzz_regressions/${name})
    list(APPEND inputs ${CMAKE_SOURCE_DIR}/tests/fuzz_regressions/${name})
  endif()
  # onnx_model's seeds are ONNX's own per-operator models, as Debian's
  # libonnx-testdata installs them (not kept here); the replay runs each.
  if(name STREQUAL "onnx_model" AND NOT KILN_FUZZ)
    file(GLOB onnx_seeds /usr/share/libonnx-testdata/data/node/*/model.onnx)
    list(APPEND inputs ${onnx_seeds})
  endif()
  if(KILN_FUZZ)
    add_test(NAME fuzz:${name} COMMAND ${exe} -runs=0 ${inputs})
  else()
    add_test(NAME fuzz:${name} COMMAND ${exe} ${inputs})
  endif()
  set_tests_properties(fuzz:${name} PROPERTIES TIMEOUT 300)
endforeach()
