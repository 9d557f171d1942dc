/*
 * The interchange C ABI against the upstream headers: every device mapping
 * and every data-type tuple hurray produces or accepts is compared with the
 * kDL* and ARROW_DEVICE_* values of the vendored dlpack.h (dmlc/dlpack
 * 7f393bb) and abi.h (apache/arrow 515410b), so a wrong number fails CI.
 * Also: struct layouts, the version hurray declares, exactly-once deleters
 * and release callbacks, and that the import path never allocates (malloc
 * and friends are wrapped at link time and counted).
 *
 * Built by CI with
 *   cc -Wall -Wextra -Werror -std=c11 -Icore/ffi/include -Icore/interop/include/vendor \
 *      core/ffi/tests/test_interchange.c target/debug/libhurray_c.a \
 *      -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=posix_memalign,--wrap=aligned_alloc \
 *      -lpthread -ldl -lm
 * Prints "N passed, 0 failed" and exits 0 on success.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrow/c/abi.h"
#include "dlpack/dlpack.h"
#include "hurray.h"

static int passed = 0, failed = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (cond) {                                                                  \
            passed++;                                                                \
        } else {                                                                     \
            failed++;                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

#define CHECK_EQ(a, b)                                                                    \
    do {                                                                                  \
        long long a_ = (long long)(a), b_ = (long long)(b);                               \
        if (a_ == b_) {                                                                   \
            passed++;                                                                     \
        } else {                                                                          \
            failed++;                                                                     \
            fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, \
                    #a, a_, #b, b_);                                                      \
        }                                                                                 \
    } while (0)

/* ---- allocation counting (the import path must not allocate) ---------- */
static int allocations = 0;
void *__real_malloc(size_t);
void *__real_calloc(size_t, size_t);
void *__real_realloc(void *, size_t);
int __real_posix_memalign(void **, size_t, size_t);
void *__real_aligned_alloc(size_t, size_t);
void *__wrap_malloc(size_t n) { allocations++; return __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { allocations++; return __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { allocations++; return __real_realloc(p, n); }
int __wrap_posix_memalign(void **p, size_t a, size_t n) { allocations++; return __real_posix_memalign(p, a, n); }
void *__wrap_aligned_alloc(size_t a, size_t n) { allocations++; return __real_aligned_alloc(a, n); }

/* ---- helpers ------------------------------------------------------------ */
static alignas(4096) uint8_t memory[4096];
static uint8_t desc[HURRAY_INTEROP_MAX_DESCRIPTOR_LEN];
static int owner_releases = 0;
static void owner_release(void *ctx) { (void)ctx; owner_releases++; }

/* A [2, 3] tensor of `type_tag` at `memory`, on (device, class). */
static hurray_status describe(uint8_t type_tag, uint8_t device, uint8_t class_, size_t *len, void **base) {
    const int64_t shape[2] = {2, 3};
    return hurray_describe_strided(type_tag, 2, shape, NULL, memory, device, class_, 0, desc,
                                   sizeof desc, len, base);
}

/* A foreign DLPack producer: a managed tensor whose deleter counts. */
static int deletes = 0;
static int64_t p_shape[2] = {2, 3}, p_strides[2] = {3, 1};
static struct DLManagedTensorVersioned producer;
static void producer_deleter(struct DLManagedTensorVersioned *self) { (void)self; deletes++; }
static struct DLManagedTensorVersioned *make_producer(int32_t device_type, DLDataType dtype) {
    memset(&producer, 0, sizeof producer);
    producer.version.major = DLPACK_MAJOR_VERSION;
    producer.version.minor = DLPACK_MINOR_VERSION;
    producer.deleter = producer_deleter;
    producer.dl_tensor.data = memory;
    producer.dl_tensor.device.device_type = (DLDeviceType)device_type;
    producer.dl_tensor.ndim = 2;
    producer.dl_tensor.dtype = dtype;
    producer.dl_tensor.shape = p_shape;
    producer.dl_tensor.strides = p_strides;
    return &producer;
}

/* ---- the tables, written with the upstream names ---------------------- */
struct device_case { uint8_t tag, class_; int dl, arrow; };
static const struct device_case devices[] = {
    {0x00, 0, kDLCPU, ARROW_DEVICE_CPU},
    {0x00, 1, kDLCPU, ARROW_DEVICE_CPU},
    {0x00, 2, kDLCPU, ARROW_DEVICE_CPU},
    {0x01, 0, kDLCUDA, ARROW_DEVICE_CUDA},
    {0x01, 1, kDLCUDAHost, ARROW_DEVICE_CUDA_HOST},
    {0x01, 2, kDLCUDAManaged, ARROW_DEVICE_CUDA_MANAGED},
    {0x01, 3, kDLCUDA, ARROW_DEVICE_CUDA},
    {0x02, 0, kDLROCM, ARROW_DEVICE_ROCM},
    {0x02, 1, kDLROCMHost, ARROW_DEVICE_ROCM_HOST},
    {0x02, 2, kDLROCM, ARROW_DEVICE_ROCM},
    {0x02, 3, kDLROCM, ARROW_DEVICE_ROCM},
    {0x03, 0, kDLMetal, ARROW_DEVICE_METAL},
    {0x03, 1, kDLMetal, ARROW_DEVICE_METAL},
    {0x03, 2, kDLMetal, ARROW_DEVICE_METAL},
    {0x04, 0, kDLVulkan, ARROW_DEVICE_VULKAN},
    {0x04, 1, kDLVulkan, ARROW_DEVICE_VULKAN},
    {0x04, 2, kDLVulkan, ARROW_DEVICE_VULKAN},
    {0x04, 3, kDLVulkan, ARROW_DEVICE_VULKAN},
    {0x05, 0, kDLWebGPU, ARROW_DEVICE_WEBGPU},
    {0x06, 0, kDLHexagon, ARROW_DEVICE_HEXAGON},
    {0x06, 1, kDLHexagon, ARROW_DEVICE_HEXAGON},
    {0x06, 2, kDLHexagon, ARROW_DEVICE_HEXAGON},
    {0x07, 0, kDLOneAPI, ARROW_DEVICE_ONEAPI},
    {0x07, 1, kDLOneAPI, ARROW_DEVICE_ONEAPI},
    {0x07, 2, kDLOneAPI, ARROW_DEVICE_ONEAPI},
    {0x07, 3, kDLOneAPI, ARROW_DEVICE_ONEAPI},
    {0x08, 0, kDLOpenCL, ARROW_DEVICE_OPENCL},
    {0x08, 1, kDLOpenCL, ARROW_DEVICE_OPENCL},
    {0x08, 2, kDLOpenCL, ARROW_DEVICE_OPENCL},
};

/* Import direction: each DLPack device code and the pair it becomes. */
struct import_case { int dl; int ok; uint8_t tag, class_; };
static const struct import_case imports[] = {
    {kDLCPU, 1, 0x00, 0},        {kDLCUDA, 1, 0x01, 0},     {kDLCUDAHost, 1, 0x01, 1},
    {kDLOpenCL, 1, 0x08, 0},     {kDLVulkan, 1, 0x04, 0},   {kDLMetal, 1, 0x03, 0},
    {kDLVPI, 0, 0, 0},           {kDLROCM, 1, 0x02, 0},     {kDLROCMHost, 1, 0x02, 1},
    {kDLExtDev, 0, 0, 0},        {kDLCUDAManaged, 1, 0x01, 2}, {kDLOneAPI, 1, 0x07, 0},
    {kDLWebGPU, 1, 0x05, 0},     {kDLHexagon, 1, 0x06, 0},  {kDLMAIA, 0, 0, 0},
    {kDLTrn, 0, 0, 0},
    /* Not in the vendored header: gaps, and kDLTPU / kDLTPUHost (19, 20). */
    {0, 0, 0, 0}, {5, 0, 0, 0}, {6, 0, 0, 0}, {kDLTrn + 1, 0, 0, 0}, {kDLTrn + 2, 0, 0, 0},
};

struct dtype_case { uint8_t tag; int ok; uint8_t code, bits; };
static const struct dtype_case dtypes[] = {
    {0x01, 1, kDLFloat, 16},  {0x02, 1, kDLBfloat, 16}, {0x03, 1, kDLFloat, 32},
    {0x04, 1, kDLFloat, 64},  {0x10, 1, kDLInt, 8},     {0x11, 1, kDLUInt, 8},
    {0x12, 1, kDLInt, 16},    {0x13, 1, kDLUInt, 16},   {0x14, 1, kDLInt, 32},
    {0x15, 1, kDLUInt, 32},   {0x16, 1, kDLInt, 64},    {0x17, 1, kDLUInt, 64},
    {0x20, 0, 0, 0}, /* bool: one bit in hurray, one byte in DLPack */
    {0x40, 1, kDLFloat8_e4m3fn, 8},  {0x41, 1, kDLFloat8_e5m2, 8},
    {0x42, 1, kDLFloat8_e8m0fnu, 8}, {0x43, 1, kDLFloat4_e2m1fn, 4},
    {0x44, 1, kDLFloat6_e2m3fn, 6},  {0x45, 1, kDLFloat6_e3m2fn, 6},
    {0x46, 0, 0, 0}, /* float128: no DLPack code */
    {0x48, 1, kDLInt, 4},     {0x49, 1, kDLUInt, 4},    {0x4A, 1, kDLInt, 2},
    {0x4B, 1, kDLUInt, 2},    {0x50, 1, kDLComplex, 64}, {0x51, 1, kDLComplex, 128},
};

/* DLPack types hurray has no element type for. */
static const DLDataType refused_dtypes[] = {
    {kDLBool, 8, 1},          {kDLOpaqueHandle, 64, 1}, {kDLFloat8_e3m4, 8, 1},
    {kDLFloat8_e4m3, 8, 1},   {kDLFloat8_e4m3b11fnuz, 8, 1}, {kDLFloat8_e4m3fnuz, 8, 1},
    {kDLFloat8_e5m2fnuz, 8, 1}, {kDLFloat, 32, 4}, {kDLFloat, 24, 1},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void test_layouts(void) {
    CHECK_EQ(sizeof(DLTensor), 48);
    CHECK_EQ(offsetof(DLTensor, byte_offset), 40);
    CHECK_EQ(sizeof(DLManagedTensor), 64);
    CHECK_EQ(sizeof(struct DLManagedTensorVersioned), 80);
    CHECK_EQ(offsetof(struct DLManagedTensorVersioned, flags), 24);
    CHECK_EQ(offsetof(struct DLManagedTensorVersioned, dl_tensor), 32);
    CHECK_EQ(sizeof(struct ArrowSchema), 72);
    CHECK_EQ(sizeof(struct ArrowArray), 80);
    CHECK_EQ(sizeof(struct ArrowDeviceArray), 128);
    CHECK_EQ(offsetof(struct ArrowDeviceArray, sync_event), 96);
}

static void test_export_devices(void) {
    for (size_t i = 0; i < COUNT(devices); i++) {
        size_t len;
        void *base;
        CHECK_EQ(describe(0x03, devices[i].tag, devices[i].class_, &len, &base), HURRAY_OK);
        void *out = NULL;
        owner_releases = 0;
        CHECK_EQ(hurray_dlpack_export(desc, len, base, 0, 0, NULL, owner_release, &out), HURRAY_OK);
        struct DLManagedTensorVersioned *m = out;
        CHECK_EQ(m->dl_tensor.device.device_type, devices[i].dl);
        CHECK_EQ(m->version.major, DLPACK_MAJOR_VERSION);
        CHECK_EQ(m->version.minor, DLPACK_MINOR_VERSION);
        CHECK_EQ(m->flags, DLPACK_FLAG_BITMASK_READ_ONLY);
        CHECK(m->dl_tensor.strides != NULL);
        m->deleter(m);
        CHECK_EQ(owner_releases, 1);

        struct ArrowDeviceArray a;
        struct ArrowSchema s;
        CHECK_EQ(hurray_arrow_export(desc, len, base, 0, NULL, NULL, owner_release, &a, &s), HURRAY_OK);
        CHECK_EQ(a.device_type, devices[i].arrow);
        CHECK(a.sync_event == NULL);
        a.array.release(&a.array);
        s.release(&s);
        CHECK(a.array.release == NULL && s.release == NULL);
        CHECK_EQ(owner_releases, 2);
    }
    /* A private device has no code. */
    size_t len;
    void *base, *out = NULL;
    CHECK_EQ(describe(0x03, 0xF0, 0, &len, &base), HURRAY_OK);
    owner_releases = 0;
    CHECK_EQ(hurray_dlpack_export(desc, len, base, 0, 0, NULL, owner_release, &out),
             HURRAY_E_INTEROP_DEVICE);
    CHECK_EQ(owner_releases, 1);
}

static void test_export_dtypes(void) {
    for (size_t i = 0; i < COUNT(dtypes); i++) {
        size_t len;
        void *base, *out = NULL;
        CHECK_EQ(describe(dtypes[i].tag, 0, 0, &len, &base), HURRAY_OK);
        hurray_status s = hurray_dlpack_export(desc, len, base, 0, HURRAY_EXPORT_LEGACY, NULL, NULL, &out);
        if (!dtypes[i].ok) {
            CHECK_EQ(s, HURRAY_E_INTEROP_DATA_TYPE);
            continue;
        }
        CHECK_EQ(s, HURRAY_OK);
        DLManagedTensor *m = out;
        CHECK_EQ(m->dl_tensor.dtype.code, dtypes[i].code);
        CHECK_EQ(m->dl_tensor.dtype.bits, dtypes[i].bits);
        CHECK_EQ(m->dl_tensor.dtype.lanes, 1);
        m->deleter(m);
    }
}

static void test_import_devices_and_dtypes(void) {
    DLDataType f32 = {kDLFloat, 32, 1};
    for (size_t i = 0; i < COUNT(imports); i++) {
        hurray_import imp;
        deletes = 0;
        allocations = 0;
        hurray_status s = hurray_dlpack_import(make_producer(imports[i].dl, f32), 0, 0, desc,
                                               sizeof desc, &imp);
        CHECK_EQ(allocations, 0);
        if (!imports[i].ok) {
            CHECK_EQ(s, HURRAY_E_INTEROP_DEVICE);
            CHECK_EQ(deletes, 1);
            continue;
        }
        CHECK_EQ(s, HURRAY_OK);
        CHECK_EQ(imp.device_tag, imports[i].tag);
        CHECK_EQ(imp.memory_class, imports[i].class_);
        CHECK_EQ(deletes, 0);
        hurray_import_release(&imp);
        hurray_import_release(&imp);
        CHECK_EQ(deletes, 1);
    }
    for (size_t i = 0; i < COUNT(dtypes); i++) {
        if (!dtypes[i].ok) continue;
        hurray_import imp;
        DLDataType t = {dtypes[i].code, dtypes[i].bits, 1};
        deletes = 0;
        CHECK_EQ(hurray_dlpack_import(make_producer(kDLCPU, t), 0, 0, desc, sizeof desc, &imp), HURRAY_OK);
        CHECK_EQ(imp.type_tag, dtypes[i].tag);
        hurray_import_release(&imp);
        CHECK_EQ(deletes, 1);
    }
    for (size_t i = 0; i < COUNT(refused_dtypes); i++) {
        hurray_import imp;
        deletes = 0;
        CHECK_EQ(hurray_dlpack_import(make_producer(kDLCPU, refused_dtypes[i]), 0, 0, desc,
                                      sizeof desc, &imp), HURRAY_E_INTEROP_DATA_TYPE);
        CHECK_EQ(deletes, 1);
    }
    /* Version and flags. */
    hurray_import imp;
    deletes = 0;
    make_producer(kDLCPU, f32)->version.major = DLPACK_MAJOR_VERSION + 1;
    CHECK_EQ(hurray_dlpack_import(&producer, 0, 0, desc, sizeof desc, &imp), HURRAY_E_INTEROP_VERSION);
    make_producer(kDLCPU, f32)->flags = DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED;
    CHECK_EQ(hurray_dlpack_import(&producer, 0, 0, desc, sizeof desc, &imp), HURRAY_OK);
    CHECK_EQ(imp.read_only, 1);
    hurray_import_release(&imp);
    make_producer(kDLCPU, f32)->flags = 1u << 7;
    CHECK_EQ(hurray_dlpack_import(&producer, 0, 0, desc, sizeof desc, &imp), HURRAY_E_INTEROP_FLAGS);
    make_producer(kDLCPU, f32)->dl_tensor.ndim = 33;
    CHECK_EQ(hurray_dlpack_import(&producer, 0, 0, desc, sizeof desc, &imp), HURRAY_E_INTEROP_NDIM);
    CHECK_EQ(deletes, 4);
    CHECK_EQ(hurray_dlpack_import(NULL, 0, 0, desc, sizeof desc, &imp), HURRAY_E_NULL);
    CHECK(hurray_interop_status_message(HURRAY_E_INTEROP_FLAGS)[0] != '\0');
}

static void test_round_trips_do_not_allocate_on_import(void) {
    size_t len;
    void *base, *out = NULL;
    hurray_import imp;
    for (int legacy = 0; legacy < 2; legacy++) {
        CHECK_EQ(describe(0x14, 0x01, 0, &len, &base), HURRAY_OK);
        owner_releases = 0;
        allocations = 0;
        CHECK_EQ(hurray_dlpack_export(desc, len, base, 3, legacy ? HURRAY_EXPORT_LEGACY : 0, NULL,
                                      owner_release, &out), HURRAY_OK);
        CHECK(allocations > 0); /* the counter sees the library's allocations */
        allocations = 0;
        CHECK_EQ(hurray_dlpack_import(out, legacy ? HURRAY_IMPORT_LEGACY : 0, 2, desc, sizeof desc, &imp),
                 HURRAY_OK);
        CHECK_EQ(allocations, 0);
        CHECK_EQ(imp.device_id, 3);
        CHECK_EQ(imp.device_tag, 0x01);
        CHECK_EQ(imp.sync_mode, 2);
        CHECK(imp.first_element == memory);
        CHECK_EQ(owner_releases, 0);
        hurray_import_release(&imp);
        CHECK_EQ(owner_releases, 1);
    }
    struct ArrowDeviceArray a;
    struct ArrowSchema s;
    CHECK_EQ(describe(0x03, 0x00, 0, &len, &base), HURRAY_OK);
    owner_releases = 0;
    CHECK_EQ(hurray_arrow_export(desc, len, base, -1, NULL, NULL, owner_release, &a, &s), HURRAY_OK);
    CHECK(strcmp(s.format, "+w:3") == 0);
    CHECK(strcmp(s.children[0]->format, "f") == 0);
    allocations = 0;
    CHECK_EQ(hurray_arrow_import(&a, &s, desc, sizeof desc, &imp), HURRAY_OK);
    CHECK_EQ(allocations, 0);
    CHECK_EQ(imp.ndim, 2);
    CHECK_EQ(imp.device_id, -1);
    hurray_import_release(&imp);
    CHECK(a.array.release == NULL && s.release == NULL);
    CHECK_EQ(owner_releases, 1);
}

int main(void) {
    test_layouts();
    test_export_devices();
    test_export_dtypes();
    test_import_devices_and_dtypes();
    test_round_trips_do_not_allocate_on_import();
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
