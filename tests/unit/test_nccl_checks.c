/*
 * test_nccl_checks.c -- the NCCL backend's checks that need no GPU:
 *
 *   test_nccl_checks buffers   every branch of mg__device_check_buffer, the decision made from
 *                              what cuPointerGetAttributes says about a buffer (host memory,
 *                              page-locked memory, another device, managed memory, a range
 *                              that runs past its allocation)
 *   test_nccl_checks types     dtype and op gating against the loaded NCCL and a device's
 *                              compute capability (mg__nccl_check_types); with
 *                              MG_TEST_EXPECT_VERSION the loaded NCCL must be that version,
 *                              and every gate must follow contract 8
 */
#include <stdlib.h>

#include "backend/nccl/nccl.h"
#include "test.h"

static mg__ptr_attr_t attr(unsigned type, int ordinal, int managed, uintptr_t base, size_t size) {
  mg__ptr_attr_t a = {type, ordinal, managed, base, size};
  return a;
}

#define CHECK_BAD(a, p, bytes, dev, needle)                                                   \
  do {                                                                                        \
    mg__ptr_attr_t a_ = (a);                                                                  \
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT,                                                    \
                  mg__device_check_buffer(&a_, (const void *)(p), (bytes), (dev), "mg_fn", "recv")); \
    ASSERT_CONTAINS(mg_last_error(), "mg_fn: recv");                                          \
    ASSERT_CONTAINS(mg_last_error(), needle);                                                 \
  } while (0)

#define CHECK_OK(a, p, bytes, dev)                                                            \
  do {                                                                                        \
    mg__ptr_attr_t a_ = (a);                                                                  \
    ASSERT_OK(mg__device_check_buffer(&a_, (const void *)(p), (bytes), (dev), "mg_fn", "recv")); \
  } while (0)

static void mode_buffers(void) {
  const uintptr_t base = 0x7f0000000000u;
  /* Device memory of the right device, inside its allocation. */
  CHECK_OK(attr(MG__CU_MEMORYTYPE_DEVICE, 1, 0, base, 4096), base, 4096, 1);
  CHECK_OK(attr(MG__CU_MEMORYTYPE_DEVICE, 1, 0, base, 4096), base + 1024, 3072, 1);
  /* ... but of another device. */
  CHECK_BAD(attr(MG__CU_MEMORYTYPE_DEVICE, 0, 0, base, 4096), base, 16, 1,
            "is memory of device 0; the communicator's device is 1");
  /* Plain host memory: the driver does not know it. */
  CHECK_BAD(attr(0, -2, 0, 0, 0), base, 16, 0, "is host memory (not allocated by CUDA)");
  /* Page-locked host memory. */
  CHECK_BAD(attr(MG__CU_MEMORYTYPE_HOST, 0, 0, base, 4096), base, 16, 0, "page-locked host memory");
  /* An array, or a type this file does not know. */
  CHECK_BAD(attr(MG__CU_MEMORYTYPE_ARRAY, 0, 0, base, 4096), base, 16, 0, "CUDA memory of type 3");
  /* Managed memory is usable from any device (the ordinal it reports does not matter). */
  CHECK_OK(attr(MG__CU_MEMORYTYPE_DEVICE, 0, 1, base, 4096), base, 4096, 3);
  CHECK_OK(attr(MG__CU_MEMORYTYPE_UNIFIED, -1, 0, base, 4096), base, 64, 2);
  /* A range that runs past the end of its allocation: how far, and which allocation. */
  CHECK_BAD(attr(MG__CU_MEMORYTYPE_DEVICE, 0, 0, base, 3072), base, 4096, 0,
            "extends 1024 bytes past the end of its allocation");
  CHECK_BAD(attr(MG__CU_MEMORYTYPE_DEVICE, 0, 0, base, 4096), base + 4000, 97, 0,
            "extends 1 bytes past the end");
  CHECK_BAD(attr(MG__CU_MEMORYTYPE_DEVICE, 0, 1, base, 4096), base + 4096 - 8, 16, 0,
            "extends 8 bytes past");
  /* The exact end is fine. */
  CHECK_OK(attr(MG__CU_MEMORYTYPE_DEVICE, 0, 0, base, 4096), base + 4000, 96, 0);
  /* An address outside the range the driver reports (inconsistent answer): refused. */
  CHECK_BAD(attr(MG__CU_MEMORYTYPE_DEVICE, 0, 0, base + 64, 4096), base, 16, 0,
            "lies outside the allocation");
  /* No extent from the driver: only the memory space is checked. */
  CHECK_OK(attr(MG__CU_MEMORYTYPE_DEVICE, 0, 0, 0, 0), base, (size_t)1 << 40, 0);
  printf("buffers: %s\n", mg_last_error());
}

static void mode_types(void) {
  mg_library_info_t li;
  ASSERT_OK(mg_library_info(MG_LIB_NCCL, &li));
  const char *want = getenv("MG_TEST_EXPECT_VERSION");
  if (!li.loaded) {
    if (want != NULL) SKIP("the NCCL this test is for is absent: %s", li.error);
    SKIP("no libnccl.so.2 here: %s", li.error);
  }
  if (want != NULL) ASSERT_EQ(li.version, atoi(want));
  const int v = li.version;
  mg__redop_t sum = {.op = MG_SUM}, avg = {.op = MG_AVG};
  mg__redop_t pre = {.op = (mg_op_t)7, .premul = 1, .residence = MG_SCALAR_HOST_IMMEDIATE};
  /* Every dtype that is not fp8, every op, every kind: fine on any supported NCCL. */
  for (int dt = 0; dt < MG_DTYPE_COUNT; dt++) {
    if (dt == MG_FLOAT8_E4M3 || dt == MG_FLOAT8_E5M2) continue;
    ASSERT_OK(mg__nccl_check_types((mg_dtype_t)dt, &sum, 1, 8, 0, "f"));
    ASSERT_OK(mg__nccl_check_types((mg_dtype_t)dt, &avg, 1, 8, 0, "f"));
    ASSERT_OK(mg__nccl_check_types((mg_dtype_t)dt, &pre, 1, 8, 0, "f"));
  }
  /* fp8: NCCL >= 2.24; reductions need compute capability 9.0. */
  for (int dt = MG_FLOAT8_E4M3; dt <= MG_FLOAT8_E5M2; dt++) {
    if (v >= MG__NCCL_VERSION(2, 24, 0)) {
      ASSERT_OK(mg__nccl_check_types((mg_dtype_t)dt, &sum, 1, 9, 0, "mg_all_reduce"));
      ASSERT_OK(mg__nccl_check_types((mg_dtype_t)dt, &pre, 1, 10, 0, "mg_all_reduce"));
      ASSERT_OK(mg__nccl_check_types((mg_dtype_t)dt, &sum, 0, 8, 0, "mg_all_gather"));
      ASSERT_STATUS(MG_ERR_NOT_SUPPORTED,
                    mg__nccl_check_types((mg_dtype_t)dt, &sum, 1, 8, 6, "mg_reduce"));
      ASSERT_CONTAINS(mg_last_error(), "mg_reduce: NCCL reduces");
      ASSERT_CONTAINS(mg_last_error(), "this device is 8.6");
    } else {
      ASSERT_STATUS(MG_ERR_NOT_SUPPORTED,
                    mg__nccl_check_types((mg_dtype_t)dt, &sum, 0, 9, 0, "mg_all_gather"));
      ASSERT_CONTAINS(mg_last_error(), "mg_all_gather");
      ASSERT_CONTAINS(mg_last_error(), "2.24");
      ASSERT_CONTAINS(mg_last_error(), li.version_string);
    }
  }
  printf("types against NCCL %s: %s\n", li.version_string, mg_last_error());
}

int main(int argc, char **argv) {
  if (argc != 2) FAIL("usage: %s buffers|types", argv[0]);
  if (strcmp(argv[1], "buffers") == 0) mode_buffers();
  else if (strcmp(argv[1], "types") == 0) mode_types();
  else FAIL("unknown mode %s", argv[1]);
  return 0;
}
