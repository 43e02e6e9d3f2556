/* Checks that a GPU network library's host entry point keeps its device
 * workspace between calls: run on kiln's stand-in CUDA driver (KILN_LIBCUDA),
 * whose kiln_fake_cuda_stat counts cuMemAlloc calls and live buffers.
 * Build with -DMODEL_H, -DMODEL_NAME (the library's name), -DIN_ELEMS and
 * -DOUT_ELEMS. The first call allocates the weights and one workspace; two
 * more calls allocate nothing; unload frees everything; a call after it
 * loads again. Exit 0 when all hold, else 1 with the first failure. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include MODEL_H

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FN(suffix) CAT(MODEL_NAME, suffix)

static long long (*stat_of)(const char*);

static int fail(const char* what) {
  fprintf(stderr, "%s (mem_allocs %lld, live_buffers %lld): %s\n", what, stat_of("mem_allocs"),
          stat_of("live_buffers"), FN(_last_error)());
  return 1;
}

int main(void) {
  const char* path = getenv("KILN_LIBCUDA");
  void* fake = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!fake || !(stat_of = (long long (*)(const char*))dlsym(fake, "kiln_fake_cuda_stat"))) {
    fprintf(stderr, "KILN_LIBCUDA must name kiln's stand-in driver\n");
    return 1;
  }
  static float in[IN_ELEMS], out[OUT_ELEMS];
  for (int i = 0; i < IN_ELEMS; ++i) in[i] = (float)(i % 7) * 0.25f - 0.5f;
  if (FN(_run)(in, out) != 0) return fail("the first call failed");
  const long long allocs = stat_of("mem_allocs"), live = stat_of("live_buffers");
  if (allocs != 2 || live != 2) return fail("the first call should allocate the weights and one workspace");
  for (int i = 0; i < 2; ++i)
    if (FN(_run)(in, out) != 0) return fail("a later call failed");
  if (stat_of("mem_allocs") != allocs) return fail("later calls allocated device memory again");
  if (FN(_unload)() != 0 || stat_of("live_buffers") != 0) return fail("unload left device memory behind");
  if (FN(_run)(in, out) != 0 || stat_of("live_buffers") != 2) return fail("a call after unload did not load again");
  FN(_unload)();
  return 0;
}
