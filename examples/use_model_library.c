/* Calling a network compiled by `kiln lib --model` from C.
 *
 *   kiln lib --model cls.onnx --input x=1x3x48x192 --out out --name cls
 *   cc -O2 -DMODEL_H='"cls.h"' -DMODEL_RUN=cls_run -DIN_ELEMS=27648 -DOUT_ELEMS=2 \
 *      -Iout use_model_library.c out/libcls.a -lpthread -lm -o use_cls
 *   ./use_cls input.bin output.bin
 *
 * Reads one f32 input (raw, IN_ELEMS values), runs the network, writes its
 * one f32 output (raw, OUT_ELEMS values). tests/cli_lib_model.sh builds it
 * against the PaddleOCR classifier and compares with `kiln run-model`.
 *
 * A GPU library (kiln lib --model ... --target cuda) takes the same call;
 * -DMODEL_LAST_ERROR=cls_last_error prints its message when a call fails,
 * and -DMODEL_GPU=cls also runs its device entry point, cls_run_device, on
 * device copies of the input and checks that it writes the same output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include MODEL_H

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s INPUT.bin OUTPUT.bin\n", argv[0]);
    return 2;
  }
  float* in = malloc(sizeof(float) * IN_ELEMS + 1); /* +1: deliberately not 64-byte aligned below */
  float* out = malloc(sizeof(float) * OUT_ELEMS);
  float* again = malloc(sizeof(float) * OUT_ELEMS);
  FILE* f = fopen(argv[1], "rb");
  if (!in || !out || !again || !f || fread(in, sizeof(float), IN_ELEMS, f) != IN_ELEMS) {
    fprintf(stderr, "cannot read %d floats from %s\n", IN_ELEMS, argv[1]);
    return 1;
  }
  fclose(f);
  int rc = MODEL_RUN(in, out);
  if (rc != 0) {
#ifdef MODEL_LAST_ERROR
    fprintf(stderr, "the network failed: code %d: %s\n", rc, MODEL_LAST_ERROR());
#else
    fprintf(stderr, "the network failed: code %d\n", rc);
#endif
    return 1;
  }
  /* The same input at an odd address gives the same output. */
  float* odd = (float*)((char*)malloc(sizeof(float) * IN_ELEMS + 8) + 4);
  memcpy(odd, in, sizeof(float) * IN_ELEMS);
  if (MODEL_RUN(odd, again) != 0 || memcmp(out, again, sizeof(float) * OUT_ELEMS) != 0) {
    fprintf(stderr, "a second run on an unaligned copy of the input differs\n");
    return 1;
  }
#ifdef MODEL_GPU
#define GPU_CAT(a, b) a##b
#define GPU_FN(a, b) GPU_CAT(a, b)
  void *d_in = NULL, *d_out = NULL, *d_ws = NULL;
  memset(again, 0xff, sizeof(float) * OUT_ELEMS); /* NaNs until the device output lands */
  if (GPU_FN(MODEL_GPU, _device_alloc)(&d_in, sizeof(float) * IN_ELEMS) != 0 ||
      GPU_FN(MODEL_GPU, _device_alloc)(&d_out, sizeof(float) * OUT_ELEMS) != 0 ||
      GPU_FN(MODEL_GPU, _device_alloc)(&d_ws, GPU_FN(MODEL_GPU, _workspace_bytes)()) != 0 ||
      GPU_FN(MODEL_GPU, _copy_to_device)(d_in, in, sizeof(float) * IN_ELEMS) != 0 ||
      GPU_FN(MODEL_GPU, _run_device)(d_in, d_out, d_ws, NULL) != 0 || GPU_FN(MODEL_GPU, _synchronize)(NULL) != 0 ||
      GPU_FN(MODEL_GPU, _copy_to_host)(again, d_out, sizeof(float) * OUT_ELEMS) != 0) {
    fprintf(stderr, "the device entry point failed: %s\n", GPU_FN(MODEL_GPU, _last_error)());
    return 1;
  }
  if (memcmp(out, again, sizeof(float) * OUT_ELEMS) != 0) {
    fprintf(stderr, "the device entry point's output differs from the host call's\n");
    return 1;
  }
  GPU_FN(MODEL_GPU, _device_free)(d_in);
  GPU_FN(MODEL_GPU, _device_free)(d_out);
  GPU_FN(MODEL_GPU, _device_free)(d_ws);
#endif
  f = fopen(argv[2], "wb");
  if (!f || fwrite(out, sizeof(float), OUT_ELEMS, f) != OUT_ELEMS) {
    fprintf(stderr, "cannot write %s\n", argv[2]);
    return 1;
  }
  fclose(f);
  return 0;
}
