/*
 * C test of the hurray C ABI: decodes fixtures, iterates a table and a tensor
 * descriptor, and checks every error path. Built by CI with
 *   cc -Wall -Wextra -Werror -std=c11 -Icore/ffi/include core/ffi/tests/test_hurray.c \
 *      target/debug/libhurray_c.a -lpthread -ldl -lm   (after `cargo build -p hurray-rs-clib`)
 * Prints "N passed, 0 failed" and exits 0 on success.
 */
#include <stdalign.h>
#include <stdio.h>
#include <string.h>

#include "hurray.h"

static int passed = 0, failed = 0;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (cond) {                                                              \
            passed++;                                                            \
        } else {                                                                 \
            failed++;                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                        \
    } while (0)

#define CHECK_STATUS(expr, expected)                                             \
    do {                                                                         \
        hurray_status s_ = (expr);                                               \
        if (s_ == (expected)) {                                                  \
            passed++;                                                            \
        } else {                                                                 \
            failed++;                                                            \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d\n", __FILE__, \
                    __LINE__, #expr, s_, hurray_status_message(s_), (expected)); \
        }                                                                        \
    } while (0)

static void put_u64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put_u32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

static void entry(uint8_t *p, uint64_t size, uint32_t align, uint8_t dev, uint8_t sync, uint8_t cls) {
    put_u64(p, size);
    put_u32(p + 8, align);
    p[12] = dev; p[13] = sync; p[14] = cls; p[15] = 0;
}

static void test_handles(void) {
    uint8_t bytes[16];
    hurray_buffer_handle h;
    hurray_error err;

    entry(bytes, 4096, 64, HURRAY_DEVICE_CUDA, HURRAY_SYNC_EVENT, HURRAY_MEMORY_STANDARD);
    CHECK_STATUS(hurray_handle_decode(bytes, sizeof bytes, &h, NULL), HURRAY_OK);
    CHECK(h.byte_size == 4096 && h.alignment == 64 && h.device_tag == HURRAY_DEVICE_CUDA);
    CHECK(h.sync_mode == HURRAY_SYNC_EVENT && h.memory_class == HURRAY_MEMORY_STANDARD && h.reserved == 0);

    /* Round trip. */
    uint8_t again[16];
    CHECK_STATUS(hurray_handle_encode(&h, again, sizeof again, NULL), HURRAY_OK);
    CHECK(memcmp(bytes, again, 16) == 0);

    /* Every rule of the spec, with the raw value reported. */
    entry(bytes, 512, 3, HURRAY_DEVICE_CPU, 0, 0);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, &h, &err), HURRAY_E_ALIGNMENT_NOT_POWER_OF_TWO);
    CHECK(err.status == HURRAY_E_ALIGNMENT_NOT_POWER_OF_TWO && err.value == 3);
    entry(bytes, 512, 32, HURRAY_DEVICE_CPU, 0, 0);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, &h, &err), HURRAY_E_ALIGNMENT_BELOW_MINIMUM);
    CHECK(err.value == 32);
    entry(bytes, 512, 64, HURRAY_DEVICE_CPU, HURRAY_SYNC_EVENT, 0);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, &h, &err), HURRAY_E_INVALID_SYNC_MODE);
    CHECK(err.value == 1);
    entry(bytes, 512, 64, HURRAY_DEVICE_CUDA, 7, 0);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, &h, &err), HURRAY_E_INVALID_SYNC_MODE);
    CHECK(err.value == 7);
    entry(bytes, 512, 64, 3, 0, 0);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, &h, &err), HURRAY_E_INVALID_DEVICE_TAG);
    CHECK(err.value == 3);
    entry(bytes, 512, 64, HURRAY_DEVICE_CUDA, 0, 9);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, &h, &err), HURRAY_E_INVALID_MEMORY_CLASS);
    entry(bytes, 512, 64, HURRAY_DEVICE_CUDA, 0, 0);
    bytes[15] = 0xAA;
    CHECK_STATUS(hurray_handle_decode(bytes, 16, &h, &err), HURRAY_E_RESERVED_NONZERO);
    CHECK(err.value == 0xAA);

    /* Null, short and misaligned arguments. */
    CHECK_STATUS(hurray_handle_decode(NULL, 16, &h, NULL), HURRAY_E_NULL);
    CHECK_STATUS(hurray_handle_decode(bytes, 15, &h, &err), HURRAY_E_BUFFER_TOO_SMALL);
    CHECK(err.value == 16);
    entry(bytes, 0, 1, HURRAY_DEVICE_CPU, 0, 0);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, NULL, NULL), HURRAY_E_NULL);
    alignas(16) uint8_t raw[32];
    hurray_buffer_handle *misaligned = (hurray_buffer_handle *)(void *)(raw + 4);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, misaligned, NULL), HURRAY_E_MISALIGNED_POINTER);
    CHECK_STATUS(hurray_handle_encode(&h, again, 8, NULL), HURRAY_E_BUFFER_TOO_SMALL);
    CHECK_STATUS(hurray_handle_encode(NULL, again, 16, NULL), HURRAY_E_NULL);

    /* Constructors and validation of C-built structs. */
    CHECK_STATUS(hurray_handle_new(1024, 64, HURRAY_DEVICE_CUDA, HURRAY_SYNC_CONSUMER_STREAM,
                                   HURRAY_MEMORY_UNIFIED, &h, NULL), HURRAY_OK);
    CHECK_STATUS(hurray_handle_validate(&h, NULL), HURRAY_OK);
    h.reserved = 1;
    CHECK_STATUS(hurray_handle_validate(&h, NULL), HURRAY_E_RESERVED_NONZERO);
    CHECK_STATUS(hurray_handle_encode(&h, again, 16, NULL), HURRAY_E_RESERVED_NONZERO);
    CHECK_STATUS(hurray_handle_empty(HURRAY_DEVICE_METAL, &h), HURRAY_OK);
    CHECK(h.byte_size == 0 && h.alignment == 1 && h.device_tag == HURRAY_DEVICE_METAL);
    CHECK_STATUS(hurray_handle_empty(0, &h), HURRAY_E_INVALID_DEVICE_TAG);
}

static void test_pointers(void) {
    hurray_buffer_handle h;
    CHECK_STATUS(hurray_handle_new(256, 64, HURRAY_DEVICE_CPU, 0, 0, &h, NULL), HURRAY_OK);
    alignas(64) static uint8_t storage[512];
    hurray_buffer b = { h, storage };
    CHECK_STATUS(hurray_buffer_check(&b, NULL), HURRAY_OK);
    CHECK(hurray_pointer_is_aligned(&h, storage) == 1);
    CHECK(hurray_pointer_is_aligned(&h, storage + 8) == 0);
    b.data = storage + 8;
    hurray_error err;
    CHECK_STATUS(hurray_buffer_check(&b, &err), HURRAY_E_MISALIGNED_POINTER);
    b.data = NULL;
    CHECK_STATUS(hurray_buffer_check(&b, NULL), HURRAY_E_NULL);
    /* An empty buffer may be null. */
    CHECK_STATUS(hurray_handle_empty(HURRAY_DEVICE_CPU, &b.handle), HURRAY_OK);
    CHECK_STATUS(hurray_buffer_check(&b, NULL), HURRAY_OK);
    CHECK_STATUS(hurray_buffer_check(NULL, NULL), HURRAY_E_NULL);
}

static void test_table(void) {
    hurray_buffer_handle hs[3];
    CHECK_STATUS(hurray_handle_new(4096, 4096, HURRAY_DEVICE_CUDA, HURRAY_SYNC_EVENT, 0, &hs[0], NULL), HURRAY_OK);
    CHECK_STATUS(hurray_handle_new(64, 64, HURRAY_DEVICE_CPU, 0, HURRAY_MEMORY_HOST_PINNED, &hs[1], NULL), HURRAY_OK);
    CHECK_STATUS(hurray_handle_empty(HURRAY_DEVICE_VULKAN, &hs[2]), HURRAY_OK);
    uint8_t bytes[48];
    CHECK_STATUS(hurray_table_encode(hs, 3, bytes, sizeof bytes, NULL), HURRAY_OK);
    hurray_error small;
    CHECK_STATUS(hurray_table_encode(hs, 3, bytes, 47, &small), HURRAY_E_BUFFER_TOO_SMALL);
    CHECK(small.value == 48);

    hurray_table t;
    CHECK_STATUS(hurray_table_parse(bytes, sizeof bytes, &t, NULL), HURRAY_OK);
    CHECK(t.count == 3);
    for (size_t i = 0; i < t.count; i++) {
        hurray_buffer_handle h;
        CHECK_STATUS(hurray_table_get(&t, i, &h), HURRAY_OK);
        CHECK(memcmp(&h, &hs[i], sizeof h) == 0);
    }
    hurray_buffer_handle h;
    CHECK_STATUS(hurray_table_get(&t, 3, &h), HURRAY_E_INDEX_OUT_OF_RANGE);

    /* The first bad entry is reported with its index. */
    bytes[16 + 13] = 9;
    hurray_error err;
    CHECK_STATUS(hurray_table_parse(bytes, sizeof bytes, &t, &err), HURRAY_E_INVALID_SYNC_MODE);
    CHECK(err.index == 1 && err.value == 9);
    CHECK_STATUS(hurray_table_parse(bytes, 17, &t, &err), HURRAY_E_TABLE_LENGTH);
    CHECK(err.value == 17);
    CHECK_STATUS(hurray_table_parse(NULL, 0, &t, NULL), HURRAY_OK);
    CHECK(t.count == 0);
    CHECK_STATUS(hurray_table_parse(NULL, 16, &t, NULL), HURRAY_E_NULL);
}

/* f32 [2, 3], compact, one 24-byte CPU buffer: docs/spec/metadata.md § Header. */
static size_t build_descriptor(uint8_t *d, int strided) {
    memset(d, 0, 128);
    memcpy(d, "HRAY", 4);
    d[4] = 1; d[5] = 0;
    put_u16(d + 6, HURRAY_FLAG_READ_ONLY);
    d[8] = HURRAY_DTYPE_F32; d[9] = 2;
    put_u16(d + 10, 1); put_u16(d + 12, 0); put_u16(d + 14, 0);
    put_u64(d + 16, 0);
    size_t table = strided ? 72 : 56;
    put_u32(d + 24, 40); put_u32(d + 28, strided ? 56 : 0); put_u32(d + 32, (uint32_t)table);
    put_u32(d + 36, (uint32_t)(table + 16));
    put_u64(d + 40, 2); put_u64(d + 48, 3);
    if (strided) { put_u64(d + 56, 1); put_u64(d + 64, 2); }
    entry(d + table, 24, 64, HURRAY_DEVICE_CPU, 0, 0);
    return table + 16;
}

static void test_tensor(void) {
    alignas(8) uint8_t d[128];
    size_t n = build_descriptor(d, 0);
    hurray_tensor_view v;
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, NULL), HURRAY_OK);
    CHECK(v.dtype == HURRAY_DTYPE_F32 && v.ndim == 2 && v.element_count == 6);
    CHECK(v.total_len == n && (v.flags & HURRAY_FLAG_READ_ONLY) && v.table.count == 1);
    CHECK(v.version_major == 1 && v.version_minor == 0 && v.strides == NULL);
    CHECK(hurray_dtype_size(v.dtype) == 4 && hurray_dtype_size(0) == 0);
    uint64_t dim;
    CHECK_STATUS(hurray_tensor_dim(&v, 0, &dim), HURRAY_OK); CHECK(dim == 2);
    CHECK_STATUS(hurray_tensor_dim(&v, 1, &dim), HURRAY_OK); CHECK(dim == 3);
    CHECK_STATUS(hurray_tensor_dim(&v, 2, &dim), HURRAY_E_INDEX_OUT_OF_RANGE);
    int64_t stride;
    CHECK_STATUS(hurray_tensor_stride(&v, 0, &stride), HURRAY_E_NO_STRIDES);
    hurray_buffer_handle data;
    CHECK_STATUS(hurray_tensor_data_buffer(&v, &data), HURRAY_OK);
    CHECK(data.byte_size == 24);
    for (size_t i = 0; i < v.table.count; i++) {
        hurray_buffer_handle h;
        CHECK_STATUS(hurray_table_get(&v.table, i, &h), HURRAY_OK);
    }

    /* A transposed (strided) view of the same buffer. */
    n = build_descriptor(d, 1);
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, NULL), HURRAY_OK);
    CHECK_STATUS(hurray_tensor_stride(&v, 1, &stride), HURRAY_OK); CHECK(stride == 2);

    /* Hostile descriptors. */
    hurray_error err;
    n = build_descriptor(d, 0);
    CHECK_STATUS(hurray_tensor_parse(d, 39, &v, &err), HURRAY_E_TRUNCATED);
    CHECK(err.value == 40);
    CHECK_STATUS(hurray_tensor_parse(d, n - 1, &v, NULL), HURRAY_E_TRUNCATED);
    d[0] = 'X';
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, NULL), HURRAY_E_BAD_MAGIC);
    n = build_descriptor(d, 0); d[4] = 2;
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, NULL), HURRAY_E_UNSUPPORTED_VERSION);
    n = build_descriptor(d, 0); d[6] = 0x02;
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, &err), HURRAY_E_UNKNOWN_FLAGS);
    CHECK(err.value == 2);
    n = build_descriptor(d, 0); d[14] = 1;
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, NULL), HURRAY_E_HEADER_RESERVED);
    n = build_descriptor(d, 0); d[8] = 0x7F;
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, NULL), HURRAY_E_INVALID_DTYPE);
    n = build_descriptor(d, 0); d[9] = 33;
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, NULL), HURRAY_E_TOO_MANY_DIMS);
    n = build_descriptor(d, 0); put_u16(d + 12, 1);
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, NULL), HURRAY_E_DATA_BUFFER_OUT_OF_RANGE);
    n = build_descriptor(d, 0); put_u32(d + 32, 60);
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, NULL), HURRAY_E_MISALIGNED_REGION);
    n = build_descriptor(d, 0); put_u32(d + 32, 64);
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, NULL), HURRAY_E_REGION_OUT_OF_BOUNDS);
    n = build_descriptor(d, 0); put_u32(d + 32, 48);
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, NULL), HURRAY_E_REGIONS_OVERLAP);
    n = build_descriptor(d, 0); put_u64(d + 40, (uint64_t)1 << 63);
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, NULL), HURRAY_E_DIM_TOO_LARGE);
    n = build_descriptor(d, 0); put_u64(d + 40, (uint64_t)1 << 40); put_u64(d + 48, (uint64_t)1 << 40);
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, NULL), HURRAY_E_SHAPE_OVERFLOW);
    n = build_descriptor(d, 1); put_u64(d + 56, (uint64_t)1 << 63);
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, NULL), HURRAY_E_STRIDE_TOO_LARGE);
    n = build_descriptor(d, 0); put_u64(d + 16, 2);
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, NULL), HURRAY_E_MISALIGNED_BYTE_OFFSET);
    n = build_descriptor(d, 0); put_u64(d + 16, 4);
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, &err), HURRAY_E_EXTENT_OUT_OF_BOUNDS);
    CHECK(err.value == 28);
    n = build_descriptor(d, 0); d[56 + 13] = 1; /* CPU buffer with Event sync */
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, &err), HURRAY_E_INVALID_SYNC_MODE);
    CHECK(err.index == 0 && err.value == 1);
    CHECK_STATUS(hurray_tensor_parse(NULL, 64, &v, NULL), HURRAY_E_NULL);
    CHECK_STATUS(hurray_tensor_dim(NULL, 0, &dim), HURRAY_E_NULL);
}

static void test_interop(void) {
    int32_t code;
    uint8_t dev, cls;
    CHECK_STATUS(hurray_to_dlpack_device(HURRAY_DEVICE_CUDA, HURRAY_MEMORY_HOST_PINNED, &code), HURRAY_OK);
    CHECK(code == 3);
    CHECK_STATUS(hurray_from_dlpack_device(13, &dev, &cls), HURRAY_OK);
    CHECK(dev == HURRAY_DEVICE_CUDA && cls == HURRAY_MEMORY_UNIFIED);
    CHECK_STATUS(hurray_to_dlpack_device(HURRAY_DEVICE_METAL, HURRAY_MEMORY_UNIFIED, &code), HURRAY_E_NO_INTEROP_CODE);
    CHECK_STATUS(hurray_from_dlpack_device(5, &dev, &cls), HURRAY_E_UNKNOWN_INTEROP_CODE);
    CHECK_STATUS(hurray_to_arrow_device(HURRAY_DEVICE_ROCM, HURRAY_MEMORY_STANDARD, &code), HURRAY_OK);
    CHECK(code == 10);
    CHECK_STATUS(hurray_to_arrow_device(HURRAY_DEVICE_MAIA, HURRAY_MEMORY_STANDARD, &code), HURRAY_E_NO_INTEROP_CODE);
    CHECK_STATUS(hurray_from_arrow_device(17, &dev, &cls), HURRAY_E_UNKNOWN_INTEROP_CODE);
    CHECK_STATUS(hurray_to_dlpack_device(0, 0, &code), HURRAY_E_INVALID_DEVICE_TAG);
    CHECK_STATUS(hurray_to_dlpack_device(HURRAY_DEVICE_CPU, 99, &code), HURRAY_E_INVALID_MEMORY_CLASS);
    CHECK_STATUS(hurray_from_dlpack_device(1, NULL, &cls), HURRAY_E_NULL);
}

static void test_messages(void) {
    CHECK(hurray_abi_version() == (1u << 16));
    CHECK(strcmp(hurray_status_message(HURRAY_OK), "ok") == 0);
    for (hurray_status s = HURRAY_E_UNKNOWN; s <= HURRAY_OK; s++) {
        const char *m = hurray_status_message(s);
        CHECK(m != NULL && strlen(m) > 0 && strcmp(m, "unknown status code") != 0);
    }
    CHECK(strcmp(hurray_status_message(-1000), "unknown status code") == 0);
}

int main(void) {
    test_handles();
    test_pointers();
    test_table();
    test_tensor();
    test_interop();
    test_messages();
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
