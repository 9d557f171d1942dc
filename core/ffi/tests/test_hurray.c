/*
 * C test of the hurray C ABI (2.0). Built by CI with
 *   cc -Wall -Wextra -Werror -std=c11 -Icore/ffi/include core/ffi/tests/test_hurray.c \
 *      target/debug/libhurray_c.a -lpthread -ldl -lm   (after `cargo build -p hurray-rs-clib`)
 * Prints "N passed, 0 failed" and exits 0 on success.
 *
 * Descriptors come from the encoder ABI or are assembled byte by byte from
 * the format's spec (docs/spec/metadata.md); no third-party data is used.
 * Every valid descriptor is also rebuilt from its view's accessors and
 * re-encoded, which must reproduce its bytes exactly.
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
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d (%s)\n",    \
                    __FILE__, __LINE__, #expr, s_, hurray_status_message(s_),    \
                    (expected), hurray_status_message(expected));                \
        }                                                                        \
    } while (0)

static void put_u64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put_u32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }

/* A 16-byte handle entry, from docs/spec/metadata.md § Buffer Table. */
static void entry(uint8_t *p, uint64_t size, uint32_t align, uint8_t dev, uint8_t sync, uint8_t cls) {
    put_u64(p, size);
    put_u32(p + 8, align);
    p[12] = dev; p[13] = sync; p[14] = cls; p[15] = 0;
}

static hurray_buffer_handle handle(uint64_t size, uint8_t dev, uint8_t sync, uint8_t cls) {
    hurray_buffer_handle h;
    memset(&h, 0xAB, sizeof h);
    hurray_status s = hurray_handle_new(size, size ? 64 : 1, dev, sync, cls, &h, NULL);
    CHECK(s == HURRAY_OK);
    return h;
}

static hurray_buffer_handle cpu(uint64_t size) { return handle(size, HURRAY_DEVICE_CPU, 0, 0); }

/* ------------------------------------------------------------------------ */
/* Buffer handles and the per-device validity table.                        */

/* The spec's per-device validity table (buffer-protocol.md § Per-Device
 * Validity), written out independently of the library. */
static int allowed(unsigned dev, unsigned cls) {
    int dev_private = dev >= 0xF0 && dev <= 0xFE, cls_private = cls >= 0xF0 && cls <= 0xFE;
    if (dev_private) return cls == HURRAY_MEMORY_STANDARD || cls_private;
    if (dev > HURRAY_DEVICE_OPENCL || cls_private || cls > HURRAY_MEMORY_PEER_TO_PEER) return 0;
    switch (dev) {
    case HURRAY_DEVICE_CUDA: case HURRAY_DEVICE_ROCM: case HURRAY_DEVICE_VULKAN:
    case HURRAY_DEVICE_LEVEL_ZERO:
        return 1;
    case HURRAY_DEVICE_WEBGPU:
        return cls == HURRAY_MEMORY_STANDARD;
    default: /* CPU, Metal, Hexagon, OpenCL */
        return cls != HURRAY_MEMORY_PEER_TO_PEER;
    }
}

static void test_handles(void) {
    uint8_t bytes[16];
    hurray_buffer_handle h;
    hurray_error err;

    /* CPU is 0x00 in the hurray format. */
    entry(bytes, 4096, 64, HURRAY_DEVICE_CPU, HURRAY_SYNC_PRODUCER_SYNCED, HURRAY_MEMORY_HOST_PINNED);
    CHECK_STATUS(hurray_handle_decode(bytes, sizeof bytes, &h, NULL), HURRAY_OK);
    CHECK(h.byte_size == 4096 && h.alignment == 64 && h.device_tag == 0x00);
    CHECK(h.sync_mode == 0 && h.memory_class == HURRAY_MEMORY_HOST_PINNED && h.reserved == 0);
    uint8_t again[16];
    CHECK_STATUS(hurray_handle_encode(&h, again, sizeof again, NULL), HURRAY_OK);
    CHECK(memcmp(bytes, again, 16) == 0);

    /* A private device with a private memory class. */
    entry(bytes, 128, 128, 0xF3, HURRAY_SYNC_EVENT, 0xF7);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, &h, NULL), HURRAY_OK);
    CHECK(h.device_tag == 0xF3 && h.memory_class == 0xF7 && h.sync_mode == HURRAY_SYNC_EVENT);
    CHECK_STATUS(hurray_handle_encode(&h, again, 16, NULL), HURRAY_OK);
    CHECK(memcmp(bytes, again, 16) == 0);

    /* Every rule, with the raw value reported. */
    entry(bytes, 512, 3, HURRAY_DEVICE_CPU, 0, 0);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, &h, &err), HURRAY_E_ALIGNMENT_NOT_POWER_OF_TWO);
    CHECK(err.status == HURRAY_E_ALIGNMENT_NOT_POWER_OF_TWO && err.value == 3);
    entry(bytes, 512, 32, HURRAY_DEVICE_CPU, 0, 0);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, &h, &err), HURRAY_E_ALIGNMENT_BELOW_MINIMUM);
    CHECK(err.value == 32 && err.expected == HURRAY_MIN_BUFFER_ALIGNMENT);
    entry(bytes, 512, 64, HURRAY_DEVICE_CPU, HURRAY_SYNC_EVENT, 0);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, &h, &err), HURRAY_E_INVALID_SYNC_MODE);
    CHECK(err.value == HURRAY_SYNC_EVENT);
    entry(bytes, 512, 64, HURRAY_DEVICE_CUDA, 7, 0);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, &h, &err), HURRAY_E_INVALID_SYNC_MODE);
    CHECK(err.value == 7);
    entry(bytes, 512, 64, 0x09, 0, 0);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, &h, &err), HURRAY_E_INVALID_DEVICE_TAG);
    CHECK(err.value == 0x09);
    entry(bytes, 512, 64, 0xFF, 0, 0);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, &h, &err), HURRAY_E_INVALID_DEVICE_TAG);
    CHECK(err.value == 0xFF);
    entry(bytes, 512, 64, HURRAY_DEVICE_CUDA, 0, 0x04);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, &h, &err), HURRAY_E_INVALID_MEMORY_CLASS);
    CHECK(err.value == 0x04);
    entry(bytes, 512, 64, HURRAY_DEVICE_CPU, 0, HURRAY_MEMORY_PEER_TO_PEER);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, &h, &err), HURRAY_E_MEMORY_CLASS_NOT_ALLOWED);
    CHECK(err.value == HURRAY_MEMORY_PEER_TO_PEER && err.expected == HURRAY_DEVICE_CPU);
    entry(bytes, 512, 64, HURRAY_DEVICE_CUDA, 0, 0xF1); /* private class on a named device */
    CHECK_STATUS(hurray_handle_decode(bytes, 16, &h, &err), HURRAY_E_MEMORY_CLASS_NOT_ALLOWED);
    entry(bytes, 512, 64, HURRAY_DEVICE_CUDA, 0, 0);
    bytes[15] = 0xAA;
    CHECK_STATUS(hurray_handle_decode(bytes, 16, &h, &err), HURRAY_E_RESERVED_NONZERO);
    CHECK(err.value == 0xAA && err.offset == 0 && err.index == 0);

    /* Null, short and misaligned arguments. */
    CHECK_STATUS(hurray_handle_decode(NULL, 16, &h, NULL), HURRAY_E_NULL);
    CHECK_STATUS(hurray_handle_decode(bytes, 15, &h, &err), HURRAY_E_TRUNCATED);
    CHECK(err.value == 15 && err.expected == 16);
    entry(bytes, 0, 1, HURRAY_DEVICE_CPU, 0, 0);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, NULL, NULL), HURRAY_E_NULL);
    alignas(16) uint8_t raw[64];
    hurray_buffer_handle *misaligned = (hurray_buffer_handle *)(void *)(raw + 4);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, misaligned, NULL), HURRAY_E_MISALIGNED_POINTER);
    CHECK_STATUS(hurray_handle_decode(bytes, 16, &h, (hurray_error *)(void *)(raw + 2)), HURRAY_OK);
    CHECK_STATUS(hurray_handle_encode(&h, again, 8, &err), HURRAY_E_OUTPUT_TOO_SMALL);
    CHECK(err.value == 8 && err.expected == 16);
    CHECK_STATUS(hurray_handle_encode(NULL, again, 16, NULL), HURRAY_E_NULL);
    CHECK_STATUS(hurray_handle_encode(&h, NULL, 16, NULL), HURRAY_E_NULL);

    /* Constructors and validation of C-built structs. */
    CHECK_STATUS(hurray_handle_new(1024, 64, HURRAY_DEVICE_CUDA, HURRAY_SYNC_CONSUMER_STREAM,
                                   HURRAY_MEMORY_UNIFIED, &h, NULL), HURRAY_OK);
    CHECK_STATUS(hurray_handle_validate(&h, NULL), HURRAY_OK);
    h.reserved = 1;
    CHECK_STATUS(hurray_handle_validate(&h, NULL), HURRAY_E_RESERVED_NONZERO);
    CHECK_STATUS(hurray_handle_encode(&h, again, 16, NULL), HURRAY_E_RESERVED_NONZERO);
    CHECK_STATUS(hurray_handle_new(64, 64, HURRAY_DEVICE_WEBGPU, 0, HURRAY_MEMORY_UNIFIED, &h, &err),
                 HURRAY_E_MEMORY_CLASS_NOT_ALLOWED);
    CHECK(err.value == HURRAY_MEMORY_UNIFIED && err.expected == HURRAY_DEVICE_WEBGPU);
    CHECK_STATUS(hurray_handle_empty(HURRAY_DEVICE_METAL, &h), HURRAY_OK);
    CHECK(h.byte_size == 0 && h.alignment == 1 && h.device_tag == HURRAY_DEVICE_METAL);
    CHECK_STATUS(hurray_handle_empty(0xF0, &h), HURRAY_OK);
    CHECK(h.device_tag == 0xF0 && h.memory_class == HURRAY_MEMORY_STANDARD);
    CHECK_STATUS(hurray_handle_empty(0x09, &h), HURRAY_E_INVALID_DEVICE_TAG);
    CHECK_STATUS(hurray_handle_validate(NULL, NULL), HURRAY_E_NULL);
}

/* Every (device, class) byte pair against the spec's table, through both the
 * query function and the handle validator. */
static void test_validity(void) {
    int agree = 1, validator_agrees = 1;
    for (unsigned dev = 0; dev < 256; dev++) {
        for (unsigned cls = 0; cls < 256; cls++) {
            int reserved_code = (dev > 0x08 && dev < 0xF0) || dev == 0xFF ||
                                (cls > 0x03 && cls < 0xF0) || cls == 0xFF;
            int want = !reserved_code && allowed(dev, cls);
            if (hurray_memory_class_allowed((uint8_t)dev, (uint8_t)cls) != want) agree = 0;
            hurray_buffer_handle h = { 64, 64, (uint8_t)dev, 0, (uint8_t)cls, 0 };
            if ((hurray_handle_validate(&h, NULL) == HURRAY_OK) != want) validator_agrees = 0;
        }
    }
    CHECK(agree);
    CHECK(validator_agrees);
}

static void test_pointers(void) {
    hurray_buffer_handle h = cpu(256);
    alignas(64) static uint8_t storage[512];
    hurray_buffer b = { h, storage };
    CHECK_STATUS(hurray_buffer_check(&b, NULL), HURRAY_OK);
    CHECK(hurray_pointer_is_aligned(&h, storage) == 1);
    CHECK(hurray_pointer_is_aligned(&h, storage + 8) == 0);
    CHECK(hurray_pointer_is_aligned(NULL, storage) == 0);
    b.data = storage + 8;
    hurray_error err;
    CHECK_STATUS(hurray_buffer_check(&b, &err), HURRAY_E_MISALIGNED_POINTER);
    CHECK(err.value == (uint64_t)(uintptr_t)(storage + 8) && err.expected == 64);
    b.data = NULL;
    CHECK_STATUS(hurray_buffer_check(&b, NULL), HURRAY_E_NULL);
    /* An empty buffer may be null. */
    CHECK_STATUS(hurray_handle_empty(HURRAY_DEVICE_CPU, &b.handle), HURRAY_OK);
    CHECK_STATUS(hurray_buffer_check(&b, NULL), HURRAY_OK);
    CHECK_STATUS(hurray_buffer_check(NULL, NULL), HURRAY_E_NULL);
}

/* ------------------------------------------------------------------------ */
/* Buffer tables and device colocation.                                      */

static void test_table(void) {
    hurray_buffer_handle hs[3];
    CHECK_STATUS(hurray_handle_new(4096, 4096, HURRAY_DEVICE_CUDA, HURRAY_SYNC_EVENT, 0, &hs[0], NULL), HURRAY_OK);
    CHECK_STATUS(hurray_handle_new(64, 64, HURRAY_DEVICE_CUDA, HURRAY_SYNC_CONSUMER_STREAM, 0, &hs[1], NULL), HURRAY_OK);
    CHECK_STATUS(hurray_handle_empty(HURRAY_DEVICE_CUDA, &hs[2]), HURRAY_OK);
    uint8_t bytes[48];
    CHECK_STATUS(hurray_table_encode(hs, 3, bytes, sizeof bytes, NULL), HURRAY_OK);
    hurray_error err;
    CHECK_STATUS(hurray_table_encode(hs, 3, bytes, 47, &err), HURRAY_E_OUTPUT_TOO_SMALL);
    CHECK(err.value == 47 && err.expected == 48);

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
    CHECK_STATUS(hurray_table_get(NULL, 0, &h), HURRAY_E_NULL);

    /* The first bad entry is reported with its index and offset. */
    bytes[16 + 13] = 9;
    CHECK_STATUS(hurray_table_parse(bytes, sizeof bytes, &t, &err), HURRAY_E_INVALID_SYNC_MODE);
    CHECK(err.index == 1 && err.value == 9 && err.offset == 16);
    CHECK_STATUS(hurray_table_parse(bytes, 17, &t, &err), HURRAY_E_TABLE_LENGTH);
    CHECK(err.value == 17 && err.expected == 16);
    CHECK_STATUS(hurray_table_parse(NULL, 0, &t, NULL), HURRAY_OK);
    CHECK(t.count == 0);
    CHECK_STATUS(hurray_table_parse(NULL, 16, &t, NULL), HURRAY_E_NULL);

    /* Device colocation: every buffer shares buffer 0's device and class. */
    hs[2] = cpu(0);
    CHECK_STATUS(hurray_table_encode(hs, 3, bytes, sizeof bytes, &err), HURRAY_E_NOT_COLOCATED);
    CHECK(err.index == 2 && err.offset == 32);
    entry(bytes + 32, 0, 1, HURRAY_DEVICE_CPU, 0, 0);
    bytes[16 + 13] = HURRAY_SYNC_CONSUMER_STREAM;
    CHECK_STATUS(hurray_table_parse(bytes, sizeof bytes, &t, &err), HURRAY_E_NOT_COLOCATED);
    CHECK(err.index == 2 && err.offset == 32);
    CHECK_STATUS(hurray_handle_new(64, 64, HURRAY_DEVICE_CUDA, 0, HURRAY_MEMORY_UNIFIED, &hs[2], NULL), HURRAY_OK);
    CHECK_STATUS(hurray_table_encode(hs, 3, bytes, sizeof bytes, &err), HURRAY_E_NOT_COLOCATED);
    hs[2].alignment = 3;
    CHECK_STATUS(hurray_table_encode(hs, 3, bytes, sizeof bytes, &err), HURRAY_E_ALIGNMENT_NOT_POWER_OF_TWO);
    CHECK(err.index == 2 && err.value == 3);
}

/* ------------------------------------------------------------------------ */
/* The spec's worked example, assembled from metadata.md § Worked Example.    */

static size_t worked_example(uint8_t *d) {
    memset(d, 0, 61);
    memcpy(d, "HRRY", 4);
    d[4] = 1; d[5] = 0;
    put_u32(d + 6, 61);
    put_u32(d + 10, 0);
    d[14] = HURRAY_TYPE_FLOAT32; d[15] = HURRAY_LAYOUT_ROW_MAJOR;
    put_u32(d + 16, 2);
    put_u64(d + 20, 3); put_u64(d + 28, 4);
    put_u64(d + 36, 0);
    d[44] = 1;
    entry(d + 45, 192, 64, HURRAY_DEVICE_CPU, 0, 0);
    return 61;
}

/* Encodes `s` into `buf`, checks the reported length, and parses it back. */
static size_t encode_ok(const hurray_descriptor_spec *s, uint8_t *buf, size_t cap) {
    size_t n = 0, len = 0;
    hurray_error err;
    memset(&err, 0, sizeof err);
    hurray_status st = hurray_descriptor_encode(s, buf, cap, &n, &err);
    if (st != HURRAY_OK) {
        fprintf(stderr, "  encode: %s (offset %u, index %llu, value %llu, expected %llu)\n",
                hurray_status_message(st), err.offset, (unsigned long long)err.index,
                (unsigned long long)err.value, (unsigned long long)err.expected);
    }
    CHECK_STATUS(st, HURRAY_OK);
    CHECK_STATUS(hurray_descriptor_encoded_len(s, &len, NULL), HURRAY_OK);
    CHECK(len == n);
    return n;
}

static hurray_descriptor_spec spec(uint8_t type, uint8_t layout, uint32_t rank, const uint64_t *shape,
                                   const hurray_buffer_handle *buffers, uint32_t count) {
    hurray_descriptor_spec s;
    memset(&s, 0, sizeof s);
    s.element_type = type;
    s.layout.tag = layout;
    s.rank = rank;
    s.shape = shape;
    s.buffers = buffers;
    s.buffer_count = count;
    s.member_role = HURRAY_MEMBER_NONE;
    return s;
}

/* Rebuilds a spec from a view's accessors, re-encodes it, and checks that
 * the bytes are the view's own: every accessor agrees with the encoder. */
static void check_reencodes(const hurray_tensor_view *v) {
    static uint64_t shape[64], parent[64], offset[64], tile_shape[8][64];
    static int64_t strides[64], outer[8][64], inner[8][64];
    static uint32_t words[64];
    static hurray_buffer_handle buffers[255];
    static hurray_tile_spec tiles[8];
    static hurray_quantization q;
    static hurray_statistics st;
    static hurray_extension_type ext;
    static uint8_t out[4096];

    hurray_descriptor_spec s = spec(v->element_type, v->layout.tag, v->rank, shape, buffers,
                                    v->buffer_count);
    s.layout = v->layout;
    s.byte_offset = v->byte_offset;
    s.member_role = v->member_role;
    CHECK_STATUS(hurray_tensor_shape(v, shape, 64), HURRAY_OK);
    for (uint32_t i = 0; i < v->buffer_count; i++) CHECK_STATUS(hurray_tensor_buffer(v, i, &buffers[i]), HURRAY_OK);
    if (v->layout.tag == HURRAY_LAYOUT_STRIDED) {
        CHECK_STATUS(hurray_tensor_strides(v, strides, 64), HURRAY_OK);
        s.strides = strides;
    }
    if (v->layout.tag == HURRAY_LAYOUT_MORTON) {
        CHECK_STATUS(hurray_tensor_morton_bits(v, words, 64), HURRAY_OK);
        s.words = words;
    }
    if (v->layout.tag == HURRAY_LAYOUT_CSF) {
        CHECK_STATUS(hurray_tensor_mode_order(v, words, 64), HURRAY_OK);
        s.words = words;
    }
    if (v->layout.tag == HURRAY_LAYOUT_TILED) {
        for (unsigned l = 0; l < v->layout.tile_depth; l++) {
            hurray_tile_level info;
            CHECK_STATUS(hurray_tensor_tile_level(v, l, &info), HURRAY_OK);
            CHECK_STATUS(hurray_tensor_tile_shape(v, l, tile_shape[l], 64), HURRAY_OK);
            tiles[l].tile_shape = tile_shape[l];
            tiles[l].outer_layout = info.outer_layout;
            tiles[l].inner_layout = info.inner_layout;
            tiles[l].outer_strides = NULL;
            tiles[l].inner_strides = NULL;
            hurray_status so = hurray_tensor_tile_strides(v, l, 1, outer[l], 64);
            CHECK(so == (info.outer_layout == HURRAY_LAYOUT_STRIDED ? HURRAY_OK : HURRAY_E_ABSENT));
            if (so == HURRAY_OK) tiles[l].outer_strides = outer[l];
            hurray_status si = hurray_tensor_tile_strides(v, l, 0, inner[l], 64);
            CHECK(si == (info.inner_layout == HURRAY_LAYOUT_STRIDED ? HURRAY_OK : HURRAY_E_ABSENT));
            if (si == HURRAY_OK) tiles[l].inner_strides = inner[l];
        }
        s.tiles = tiles;
        s.tile_levels = v->layout.tile_depth;
    }
    if (v->flags & HURRAY_FLAG_HAS_QUANTIZATION) {
        CHECK_STATUS(hurray_tensor_quantization(v, &q), HURRAY_OK);
        s.quantization = &q;
    } else {
        CHECK_STATUS(hurray_tensor_quantization(v, &q), HURRAY_E_ABSENT);
    }
    if (v->flags & HURRAY_FLAG_HAS_SHARD) {
        CHECK_STATUS(hurray_tensor_shard(v, parent, offset, 64), HURRAY_OK);
        s.parent_shape = parent;
        s.shard_offset = offset;
    } else {
        CHECK_STATUS(hurray_tensor_shard(v, parent, offset, 64), HURRAY_E_ABSENT);
    }
    if (v->flags & HURRAY_FLAG_HAS_STATISTICS) {
        CHECK_STATUS(hurray_tensor_statistics(v, &st), HURRAY_OK);
        s.statistics = &st;
    } else {
        CHECK_STATUS(hurray_tensor_statistics(v, &st), HURRAY_E_ABSENT);
    }
    if (v->flags & HURRAY_FLAG_HAS_EXTENSION_TYPE) {
        CHECK_STATUS(hurray_tensor_extension_type(v, &ext), HURRAY_OK);
        s.extension_type = &ext;
    } else {
        CHECK_STATUS(hurray_tensor_extension_type(v, &ext), HURRAY_E_ABSENT);
    }
    CHECK(((v->flags & HURRAY_FLAG_HAS_COMPOSITE_MEMBER) != 0) == (v->member_role != HURRAY_MEMBER_NONE));
    size_t n = 0;
    CHECK_STATUS(hurray_descriptor_encode(&s, out, sizeof out, &n, NULL), HURRAY_OK);
    CHECK(n == v->len && memcmp(out, v->bytes, n) == 0);
}

/* Parses `bytes` (with `options`, may be NULL), checks the round trip. */
static hurray_tensor_view parse_ok(const uint8_t *bytes, size_t n, const hurray_read_options *options) {
    hurray_tensor_view v;
    memset(&v, 0, sizeof v);
    hurray_error err;
    hurray_status s = hurray_tensor_parse_with(bytes, n, options, &v, &err);
    if (s != HURRAY_OK) {
        fprintf(stderr, "  parse: %s (offset %u, index %llu, value %llu, expected %llu)\n",
                hurray_status_message(s), err.offset, (unsigned long long)err.index,
                (unsigned long long)err.value, (unsigned long long)err.expected);
    }
    CHECK_STATUS(s, HURRAY_OK);
    if (s == HURRAY_OK) {
        CHECK(v.bytes == bytes && v.len == n && v.version_major == 1 && v.version_minor == 0);
        check_reencodes(&v);
    }
    return v;
}

static void test_worked_example(void) {
    alignas(8) uint8_t d[80];
    size_t n = worked_example(d);
    hurray_tensor_view v = parse_ok(d, n, NULL);
    CHECK(v.element_type == HURRAY_TYPE_FLOAT32 && v.layout.tag == HURRAY_LAYOUT_ROW_MAJOR);
    CHECK(v.rank == 2 && v.element_count == 12 && v.is_dynamic == 0 && v.element_bits == 32);
    CHECK(v.flags == 0 && v.byte_offset == 0 && v.buffer_count == 1 && v.table.count == 1);
    CHECK(v.member_role == HURRAY_MEMBER_NONE);
    uint64_t dim;
    CHECK_STATUS(hurray_tensor_dim(&v, 0, &dim), HURRAY_OK); CHECK(dim == 3);
    CHECK_STATUS(hurray_tensor_dim(&v, 1, &dim), HURRAY_OK); CHECK(dim == 4);
    CHECK_STATUS(hurray_tensor_dim(&v, 2, &dim), HURRAY_E_INDEX_OUT_OF_RANGE);
    uint64_t shape[2];
    CHECK_STATUS(hurray_tensor_shape(&v, shape, 1), HURRAY_E_OUTPUT_TOO_SMALL);
    CHECK_STATUS(hurray_tensor_shape(&v, NULL, 2), HURRAY_E_NULL);
    int64_t strides[2];
    CHECK_STATUS(hurray_tensor_strides(&v, strides, 2), HURRAY_OK);
    CHECK(strides[0] == 4 && strides[1] == 1);
    hurray_buffer_handle h;
    CHECK_STATUS(hurray_tensor_buffer(&v, 0, &h), HURRAY_OK);
    CHECK(h.byte_size == 192 && h.alignment == 64 && h.device_tag == HURRAY_DEVICE_CPU);
    CHECK_STATUS(hurray_tensor_buffer(&v, 1, &h), HURRAY_E_INDEX_OUT_OF_RANGE);
    CHECK_STATUS(hurray_table_get(&v.table, 0, &h), HURRAY_OK);
    uint64_t bytes;
    CHECK_STATUS(hurray_tensor_storage_bytes(&v, 12, &bytes), HURRAY_OK); CHECK(bytes == 48);
    CHECK_STATUS(hurray_tensor_storage_bytes(&v, UINT64_MAX, &bytes), HURRAY_E_OVERFLOW);
    uint32_t words[2];
    CHECK_STATUS(hurray_tensor_morton_bits(&v, words, 2), HURRAY_E_WRONG_LAYOUT);
    CHECK_STATUS(hurray_tensor_mode_order(&v, words, 2), HURRAY_E_WRONG_LAYOUT);
    hurray_tile_level level;
    CHECK_STATUS(hurray_tensor_tile_level(&v, 0, &level), HURRAY_E_WRONG_LAYOUT);
    CHECK_STATUS(hurray_tensor_dim(NULL, 0, &dim), HURRAY_E_NULL);

    /* Exact parse vs stream parse. */
    d[61] = 0xEE;
    hurray_error err;
    CHECK_STATUS(hurray_tensor_parse(d, 62, &v, &err), HURRAY_E_TRAILING_BYTES);
    CHECK(err.value == 62 && err.expected == 61 && err.offset == 61);
    CHECK_STATUS(hurray_tensor_parse_prefix(d, 62, &v, NULL), HURRAY_OK);
    CHECK(v.len == 61 && v.bytes == d);
    CHECK_STATUS(hurray_tensor_parse_prefix_with(d, 62, NULL, &v, NULL), HURRAY_OK);

    /* A view whose bytes changed after the parse is refused, not trusted. */
    CHECK_STATUS(hurray_tensor_parse(d, 61, &v, NULL), HURRAY_OK);
    d[14] = 0x47;
    CHECK_STATUS(hurray_tensor_dim(&v, 0, &dim), HURRAY_E_INVALID_VIEW);
    worked_example(d);
    CHECK_STATUS(hurray_tensor_dim(&v, 0, &dim), HURRAY_OK);
    hurray_tensor_view bad = v;
    bad.len = 60;
    CHECK_STATUS(hurray_tensor_shape(&bad, shape, 2), HURRAY_E_INVALID_VIEW);
}

/* Each header rule of the worked example, broken one at a time. */
static void test_header_errors(void) {
    alignas(8) uint8_t d[80];
    hurray_tensor_view v;
    hurray_error err;
    size_t n = worked_example(d);

    CHECK_STATUS(hurray_tensor_parse(d, 19, &v, &err), HURRAY_E_TRUNCATED);
    CHECK(err.value == 19 && err.expected == 20 && err.offset == 0);
    CHECK_STATUS(hurray_tensor_parse(d, 60, &v, &err), HURRAY_E_TRUNCATED);
    CHECK(err.value == 60 && err.expected == 61 && err.offset == 6);
    d[3] = 'A'; /* "HRRA" */
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, &err), HURRAY_E_BAD_MAGIC);
    CHECK(err.value == 0x41525248u && err.expected == 0x59525248u && err.offset == 0);
    n = worked_example(d); d[4] = 2; d[5] = 7;
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, &err), HURRAY_E_UNSUPPORTED_VERSION);
    CHECK(err.value == 2 && err.index == 7 && err.offset == 4);
    n = worked_example(d); put_u32(d + 6, 62); d[61] = 0;
    CHECK_STATUS(hurray_tensor_parse(d, 62, &v, &err), HURRAY_E_LENGTH_MISMATCH);
    CHECK(err.value == 62 && err.expected == 61 && err.offset == 6);
    /* A later minor version may append fields a 1.0 reader skips. */
    n = worked_example(d); put_u32(d + 6, 62); d[5] = 1; d[61] = 0x99;
    CHECK_STATUS(hurray_tensor_parse(d, 62, &v, NULL), HURRAY_OK);
    CHECK(v.version_minor == 1 && v.len == 62);
    n = worked_example(d); d[10] = 0x80;
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, &err), HURRAY_E_RESERVED_FLAGS);
    CHECK(err.value == 0x80 && err.offset == 10);
    n = worked_example(d); d[10] = HURRAY_FLAG_HAS_EXTENSION_TYPE;
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, &err), HURRAY_E_EXTENSION_TYPE_MISMATCH);
    CHECK(err.value == HURRAY_TYPE_FLOAT32 && err.index == 1);
    n = worked_example(d); d[14] = 0x47;
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, &err), HURRAY_E_INVALID_TYPE_TAG);
    CHECK(err.value == 0x47 && err.offset == 14);
    n = worked_example(d); d[15] = 0x0C;
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, &err), HURRAY_E_INVALID_LAYOUT_TAG);
    CHECK(err.value == 0x0C && err.offset == 15);
    n = worked_example(d); d[16] = 65;
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, &err), HURRAY_E_RANK_TOO_LARGE);
    CHECK(err.value == 65 && err.expected == 64 && err.offset == 16);
    n = worked_example(d); put_u64(d + 45, 47);
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, &err), HURRAY_E_BUFFER_TOO_SMALL);
    CHECK(err.index == 0 && err.value == 47 && err.expected == 48 && err.offset == 45);
    n = worked_example(d); d[45 + 13] = HURRAY_SYNC_EVENT; /* CPU buffer with Event sync */
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, &err), HURRAY_E_INVALID_SYNC_MODE);
    CHECK(err.index == 0 && err.value == HURRAY_SYNC_EVENT && err.offset == 45);
    n = worked_example(d); d[45 + 12] = 0x01; /* a DLPack CPU code is CUDA here: valid */
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, NULL), HURRAY_OK);
    n = worked_example(d); put_u64(d + 36, 2);
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, &err), HURRAY_E_BYTE_OFFSET_MISALIGNED);
    CHECK(err.value == 2 && err.expected == 4 && err.offset == 36);
    n = worked_example(d); put_u64(d + 36, 196);
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, &err), HURRAY_E_BYTE_OFFSET_OUT_OF_RANGE);
    CHECK(err.value == 196 && err.expected == 192);
    n = worked_example(d); put_u64(d + 36, 148);
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, &err), HURRAY_E_BUFFER_TOO_SMALL);
    CHECK(err.expected == 196);
    n = worked_example(d); put_u64(d + 36, 144);
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, NULL), HURRAY_OK);
    n = worked_example(d); d[44] = 0; put_u32(d + 6, 45);
    CHECK_STATUS(hurray_tensor_parse(d, 45, &v, &err), HURRAY_E_BUFFER_COUNT);
    CHECK(err.value == 0 && err.expected == 1 && err.offset == 44);
    n = worked_example(d); put_u64(d + 20, 1ull << 32); put_u64(d + 28, 1ull << 32);
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, &err), HURRAY_E_OVERFLOW);
    n = worked_example(d); d[57] = 0xF2; /* a private device is accepted */
    CHECK_STATUS(hurray_tensor_parse(d, n, &v, NULL), HURRAY_OK);
    CHECK_STATUS(hurray_tensor_parse(NULL, 61, &v, NULL), HURRAY_E_NULL);
    CHECK_STATUS(hurray_tensor_parse(d, n, NULL, NULL), HURRAY_E_NULL);
    (void)n;
}

/* ------------------------------------------------------------------------ */
/* Every layout through the encoder, read back through the view.             */

static uint8_t buf[4096];

static void test_dense_layouts(void) {
    hurray_tensor_view v;
    size_t n;
    int64_t st[4];

    /* Column-major int16 [2, 3]: implied strides [1, 2]. */
    uint64_t s23[] = { 2, 3 };
    hurray_buffer_handle b12[] = { cpu(12) };
    hurray_descriptor_spec s = spec(HURRAY_TYPE_INT16, HURRAY_LAYOUT_COLUMN_MAJOR, 2, s23, b12, 1);
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK(v.layout.tag == HURRAY_LAYOUT_COLUMN_MAJOR && v.element_bits == 16);
    CHECK_STATUS(hurray_tensor_strides(&v, st, 2), HURRAY_OK);
    CHECK(st[0] == 1 && st[1] == 2);

    /* Strided float32 [3, 4], rows reversed: strides [-4, 1], byte_offset 32. */
    uint64_t s34[] = { 3, 4 };
    int64_t rev[] = { -4, 1 };
    hurray_buffer_handle b48[] = { cpu(48) };
    s = spec(HURRAY_TYPE_FLOAT32, HURRAY_LAYOUT_STRIDED, 2, s34, b48, 1);
    s.strides = rev;
    s.byte_offset = 32;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK(v.byte_offset == 32);
    CHECK_STATUS(hurray_tensor_strides(&v, st, 2), HURRAY_OK);
    CHECK(st[0] == -4 && st[1] == 1);
    hurray_error err;
    s.byte_offset = 0; /* the first row now lies before the buffer */
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_EXTENT_OUT_OF_BOUNDS);
    CHECK((int64_t)err.value == -32 && err.expected == 48);
    s.strides = NULL;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_NULL);

    /* Tiled float32 [4, 4]: 2x2 tiles in row-major order, each holding two
     * 1x2 tiles whose inside is strided [2, 1]. */
    uint64_t s44[] = { 4, 4 }, t22[] = { 2, 2 }, t12[] = { 1, 2 };
    int64_t in21[] = { 2, 1 };
    hurray_tile_spec tiles[2] = {
        { t22, NULL, NULL, HURRAY_LAYOUT_ROW_MAJOR, HURRAY_LAYOUT_TILED },
        { t12, NULL, in21, HURRAY_LAYOUT_ROW_MAJOR, HURRAY_LAYOUT_STRIDED },
    };
    hurray_buffer_handle b64[] = { cpu(64) };
    s = spec(HURRAY_TYPE_FLOAT32, HURRAY_LAYOUT_TILED, 2, s44, b64, 1);
    s.tiles = tiles;
    s.tile_levels = 2;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK(v.layout.tag == HURRAY_LAYOUT_TILED && v.layout.tile_depth == 2);
    hurray_tile_level level;
    CHECK_STATUS(hurray_tensor_tile_level(&v, 0, &level), HURRAY_OK);
    CHECK(level.outer_layout == HURRAY_LAYOUT_ROW_MAJOR && level.inner_layout == HURRAY_LAYOUT_TILED);
    CHECK_STATUS(hurray_tensor_tile_level(&v, 1, &level), HURRAY_OK);
    CHECK(level.inner_layout == HURRAY_LAYOUT_STRIDED);
    CHECK_STATUS(hurray_tensor_tile_level(&v, 2, &level), HURRAY_E_INDEX_OUT_OF_RANGE);
    uint64_t ts[2];
    CHECK_STATUS(hurray_tensor_tile_shape(&v, 1, ts, 2), HURRAY_OK);
    CHECK(ts[0] == 1 && ts[1] == 2);
    CHECK_STATUS(hurray_tensor_tile_strides(&v, 1, 0, st, 2), HURRAY_OK);
    CHECK(st[0] == 2 && st[1] == 1);
    CHECK_STATUS(hurray_tensor_tile_strides(&v, 0, 1, st, 2), HURRAY_E_ABSENT);
    CHECK_STATUS(hurray_tensor_strides(&v, st, 2), HURRAY_E_NO_STRIDES);
    int64_t in15[] = { 1, 5 };
    tiles[1].inner_strides = in15; /* reaches past the 2-element tile */
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_TILE_OVERRUN);
    CHECK(err.index == 1);
    hurray_tile_spec deep[9];
    for (int i = 0; i < 9; i++) {
        hurray_tile_spec t = { t22, NULL, NULL, HURRAY_LAYOUT_ROW_MAJOR, HURRAY_LAYOUT_TILED };
        deep[i] = t;
    }
    s.tiles = deep;
    s.tile_levels = 9;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_TILING_TOO_DEEP);
    CHECK(err.expected == HURRAY_MAX_TILE_LEVELS);
    /* Levels whose nesting disagrees: the first is not tiled inside, yet a
     * second follows. No bytes say that, so nothing is written. */
    tiles[1].inner_strides = in21;
    tiles[0].inner_layout = HURRAY_LAYOUT_ROW_MAJOR;
    s.tiles = tiles;
    s.tile_levels = 2;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_UNSUPPORTED);
    CHECK(strcmp(hurray_status_message(HURRAY_E_UNSUPPORTED), "the encoder has no bytes for what the spec describes") == 0);

    /* Morton float32 [4, 4] with 2 bits per axis. */
    uint32_t bits[] = { 2, 2 };
    s = spec(HURRAY_TYPE_FLOAT32, HURRAY_LAYOUT_MORTON, 2, s44, b64, 1);
    s.words = bits;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    uint32_t w[2];
    CHECK_STATUS(hurray_tensor_morton_bits(&v, w, 2), HURRAY_OK);
    CHECK(w[0] == 2 && w[1] == 2);
    bits[0] = 1;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_SHAPE_DOES_NOT_FIT_CURVE);
    CHECK(err.index == 0 && err.value == 4);

    /* Hilbert float32 [4, 4], order 2. */
    s = spec(HURRAY_TYPE_FLOAT32, HURRAY_LAYOUT_HILBERT, 2, s44, b64, 1);
    s.layout.hilbert_order = 2;
    s.layout.hilbert_rank = 2;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK(v.layout.hilbert_order == 2 && v.layout.hilbert_rank == 2);

    /* A scalar is row-major only. */
    hurray_buffer_handle b8[] = { cpu(8) };
    s = spec(HURRAY_TYPE_FLOAT64, HURRAY_LAYOUT_ROW_MAJOR, 0, NULL, b8, 1);
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK(v.rank == 0 && v.element_count == 1);
    s.layout.tag = HURRAY_LAYOUT_COLUMN_MAJOR;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_RANK_NOT_ALLOWED);
    CHECK(err.value == 0 && err.index == HURRAY_LAYOUT_COLUMN_MAJOR);

    /* Dynamic dimensions: sizes unchecked, strides undefined. */
    uint64_t dyn[] = { HURRAY_DYNAMIC, 4 };
    hurray_buffer_handle none[] = { cpu(0) };
    s = spec(HURRAY_TYPE_FLOAT32, HURRAY_LAYOUT_ROW_MAJOR, 2, dyn, none, 1);
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK(v.is_dynamic == 1);
    uint64_t dim;
    CHECK_STATUS(hurray_tensor_dim(&v, 0, &dim), HURRAY_OK); CHECK(dim == HURRAY_DYNAMIC);
    CHECK_STATUS(hurray_tensor_strides(&v, st, 2), HURRAY_E_NO_STRIDES);

    /* Sub-byte elements: bool is one bit, packed LSB first. */
    uint64_t s10[] = { 10 };
    hurray_buffer_handle b2[] = { cpu(2) };
    s = spec(HURRAY_TYPE_BOOL, HURRAY_LAYOUT_ROW_MAJOR, 1, s10, b2, 1);
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK(v.element_bits == 1);
    uint64_t bytes;
    CHECK_STATUS(hurray_tensor_storage_bytes(&v, 10, &bytes), HURRAY_OK); CHECK(bytes == 2);
    hurray_buffer_handle b1[] = { cpu(1) };
    s.buffers = b1;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_BUFFER_TOO_SMALL);
    CHECK(err.value == 1 && err.expected == 2);

    /* Encoder argument checks. */
    s = spec(HURRAY_TYPE_FLOAT32, HURRAY_LAYOUT_ROW_MAJOR, 2, s34, b48, 1);
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, 10, &n, &err), HURRAY_E_OUTPUT_TOO_SMALL);
    CHECK(err.value == 10 && err.expected == 61);
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, NULL, NULL), HURRAY_E_NULL);
    CHECK_STATUS(hurray_descriptor_encode(NULL, buf, sizeof buf, &n, NULL), HURRAY_E_NULL);
    s.buffer_count = 256;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_CAPACITY_EXCEEDED);
    CHECK(err.expected == 255);
    s.buffer_count = 1;
    s.rank = 65;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_RANK_TOO_LARGE);
    s.rank = 2;
    s.element_type = 0x00;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_INVALID_TYPE_TAG);
    s.element_type = HURRAY_TYPE_FLOAT32;
    s.layout.tag = 0x30;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_INVALID_LAYOUT_TAG);
    s.layout.tag = HURRAY_LAYOUT_ROW_MAJOR;
    uint64_t huge[] = { 1ull << 32, 1ull << 32 };
    s.shape = huge;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_OVERFLOW);
    s.shape = s34;
    hurray_buffer_handle two[] = { cpu(48), cpu(48) };
    s.buffers = two;
    s.buffer_count = 2;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_BUFFER_COUNT);
    CHECK(err.value == 2 && err.expected == 1);
    two[1] = handle(48, HURRAY_DEVICE_CUDA, 0, 0);
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_NOT_COLOCATED);
    CHECK(err.index == 1);
    two[1].alignment = 5;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_ALIGNMENT_NOT_POWER_OF_TWO);
    CHECK(err.index == 1 && err.value == 5);
}

static void test_sparse_layouts(void) {
    hurray_tensor_view v;
    hurray_error err;
    size_t n;

    /* COO float32 [10, 10], 5 sorted entries. */
    uint64_t s10x10[] = { 10, 10 };
    hurray_buffer_handle coo_bufs[] = { cpu(20), cpu(80) };
    hurray_descriptor_spec s = spec(HURRAY_TYPE_FLOAT32, HURRAY_LAYOUT_COO, 2, s10x10, coo_bufs, 2);
    s.layout.nnz = 5;
    s.layout.is_sorted = 1;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK(v.layout.nnz == 5 && v.layout.is_sorted == 1 && v.buffer_count == 2);
    /* The same descriptor, assembled from metadata.md's COO fields. */
    alignas(8) uint8_t d[128];
    memset(d, 0, sizeof d);
    memcpy(d, "HRRY", 4); d[4] = 1;
    put_u32(d + 6, 93); d[14] = HURRAY_TYPE_FLOAT32; d[15] = HURRAY_LAYOUT_COO; put_u32(d + 16, 2);
    put_u64(d + 20, 10); put_u64(d + 28, 10); /* byte_offset 0 at 36 */
    put_u64(d + 44, 5); d[52] = 1; /* nnz, is_sorted, 7 reserved bytes */
    d[60] = 2; entry(d + 61, 20, 64, HURRAY_DEVICE_CPU, 0, 0); entry(d + 77, 80, 64, HURRAY_DEVICE_CPU, 0, 0);
    CHECK(n == 93 && memcmp(d, buf, 93) == 0);
    d[55] = 1;
    CHECK_STATUS(hurray_tensor_parse(d, 93, &v, &err), HURRAY_E_RESERVED_NONZERO);
    CHECK(err.offset == 53);
    d[55] = 0; d[52] = 2;
    CHECK_STATUS(hurray_tensor_parse(d, 93, &v, &err), HURRAY_E_INVALID_VALUE);
    CHECK(err.value == 2 && err.offset == 52);
    coo_bufs[1] = cpu(72);
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_BUFFER_SIZE_MISMATCH);
    CHECK(err.index == 1 && err.value == 72 && err.expected == 80);
    coo_bufs[1] = cpu(80);
    s.byte_offset = 8;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_BYTE_OFFSET_NOT_ZERO);
    CHECK(err.value == 8);

    /* CSR and CSC float64 [3, 4], 4 stored values. */
    uint64_t s34[] = { 3, 4 };
    hurray_buffer_handle csr_bufs[] = { cpu(32), cpu(32), cpu(32) };
    s = spec(HURRAY_TYPE_FLOAT64, HURRAY_LAYOUT_CSR, 2, s34, csr_bufs, 3);
    s.layout.nnz = 4;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK(v.layout.tag == HURRAY_LAYOUT_CSR && v.layout.nnz == 4);
    s.buffer_count = 2;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_BUFFER_COUNT);
    CHECK(err.value == 2 && err.expected == 3);
    hurray_buffer_handle csc_bufs[] = { cpu(32), cpu(32), cpu(40) };
    s = spec(HURRAY_TYPE_FLOAT64, HURRAY_LAYOUT_CSC, 2, s34, csc_bufs, 3);
    s.layout.nnz = 4;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK(v.layout.tag == HURRAY_LAYOUT_CSC);
    uint64_t s234[] = { 2, 3, 4 };
    s.shape = s234;
    s.rank = 3;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_RANK_NOT_ALLOWED);
    CHECK(err.value == 3 && err.index == HURRAY_LAYOUT_CSC);

    /* CSF float32 [2, 3, 4], 3 stored values: 2 root fibers, 3 middle nodes. */
    uint32_t order[] = { 0, 1, 2 };
    hurray_buffer_handle csf_bufs[] = { cpu(12), cpu(16), cpu(16), cpu(24), cpu(24), cpu(32), cpu(24) };
    s = spec(HURRAY_TYPE_FLOAT32, HURRAY_LAYOUT_CSF, 3, s234, csf_bufs, 7);
    s.layout.nnz = 3;
    s.words = order;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    uint32_t mo[3];
    CHECK_STATUS(hurray_tensor_mode_order(&v, mo, 3), HURRAY_OK);
    CHECK(mo[0] == 0 && mo[1] == 1 && mo[2] == 2);
    CHECK_STATUS(hurray_tensor_mode_order(&v, mo, 2), HURRAY_E_OUTPUT_TOO_SMALL);
    order[1] = 0;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_NOT_A_PERMUTATION);
    CHECK(err.value == 0);
}

static void test_other_layouts(void) {
    hurray_tensor_view v;
    hurray_error err;
    size_t n;

    /* Block-paged float16 KV cache: 4 pages of 16 tokens, 2 heads of 8. */
    uint64_t kv[] = { 64, 2, 8 };
    hurray_buffer_handle kv_bufs[] = { cpu(2048), cpu(16), cpu(12) };
    hurray_descriptor_spec s = spec(HURRAY_TYPE_FLOAT16, HURRAY_LAYOUT_BLOCK_PAGED, 3, kv, kv_bufs, 3);
    s.layout.page_size = 16;
    s.layout.num_pages = 4;
    s.layout.num_seqs = 2;
    s.layout.kv_role = 1;
    s.layout.layer_index = 3;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK(v.layout.page_size == 16 && v.layout.num_pages == 4 && v.layout.num_seqs == 2);
    CHECK(v.layout.kv_role == 1 && v.layout.layer_index == 3 && v.layout.wide_indices == 0);
    s.layout.layer_index = HURRAY_NO_LAYER;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK(v.layout.layer_index == HURRAY_NO_LAYER);
    s.layout.kv_role = 5;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_INVALID_VALUE);
    CHECK(err.value == 5);
    s.layout.kv_role = 0;
    s.layout.page_size = 0;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_INVALID_VALUE);
    CHECK(err.value == 0 && err.offset == 52); /* page_size follows byte_offset: 20 + 3 * 8 + 8 */

    /* Composite head: a partition of two members, no buffers. */
    uint64_t s84[] = { 8, 4 };
    s = spec(HURRAY_TYPE_FLOAT32, HURRAY_LAYOUT_COMPOSITE, 2, s84, NULL, 0);
    s.layout.composition_rule = 1;
    s.layout.member_count = 2;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK(v.layout.composition_rule == 1 && v.layout.member_count == 2 && v.buffer_count == 0);
    hurray_quantization q;
    memset(&q, 0, sizeof q);
    q.scheme_tag = HURRAY_SCHEME_PER_TENSOR;
    q.scale = 1.0f;
    q.zero_point_buffer = HURRAY_NO_BUFFER;
    s.quantization = &q;
    s.element_type = HURRAY_TYPE_INT8; /* a storage type per-tensor accepts */
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_SECTION_NOT_ALLOWED);
    CHECK(err.value == HURRAY_LAYOUT_COMPOSITE && err.index == HURRAY_FLAG_HAS_QUANTIZATION && err.offset == 10);
    s.quantization = NULL;
    s.element_type = HURRAY_TYPE_FLOAT32;
    s.layout.composition_rule = 0xF4; /* private rule: accepted only when agreed */
    n = encode_ok(&s, buf, sizeof buf);
    CHECK_STATUS(hurray_tensor_parse(buf, n, &v, &err), HURRAY_E_PRIVATE_CODE_REFUSED);
    CHECK(err.value == 0xF4);
    hurray_read_options rules = { NULL, 0, 0, 1 };
    v = parse_ok(buf, n, &rules);
    CHECK(v.layout.composition_rule == 0xF4);
    s.layout.composition_rule = 7;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_INVALID_VALUE);

    /* A private layout: refused unless the reader knows its id. */
    static const uint8_t data[] = { 'a', 'b', 'c' };
    hurray_buffer_handle one[] = { cpu(100) };
    s = spec(HURRAY_TYPE_UINT8, 0xF5, 2, s84, one, 1);
    s.layout.extension_id = 0x5EED;
    s.layout.extension_data = data;
    s.layout.extension_data_len = 3;
    n = encode_ok(&s, buf, sizeof buf);
    CHECK_STATUS(hurray_tensor_parse(buf, n, &v, &err), HURRAY_E_UNKNOWN_EXTENSION_LAYOUT);
    CHECK(err.value == 0x5EED);
    static const uint64_t ids[] = { 1, 0x5EED };
    hurray_read_options known = { ids, 2, 0, 0 };
    v = parse_ok(buf, n, &known);
    CHECK(v.layout.tag == 0xF5 && v.layout.extension_id == 0x5EED && v.layout.extension_data_len == 3);
    CHECK(v.layout.extension_data >= buf && memcmp(v.layout.extension_data, "abc", 3) == 0);
    CHECK(v.options.extension_layouts == ids);
}

/* ------------------------------------------------------------------------ */
/* Optional sections.                                                        */

static void test_quantization(void) {
    hurray_tensor_view v;
    hurray_error err;
    hurray_quantization q, got;
    size_t n;

    /* Per-tensor int8 [4]. */
    uint64_t s4[] = { 4 };
    hurray_buffer_handle b4[] = { cpu(4) };
    hurray_descriptor_spec s = spec(HURRAY_TYPE_INT8, HURRAY_LAYOUT_ROW_MAJOR, 1, s4, b4, 1);
    memset(&q, 0, sizeof q);
    q.scheme_tag = HURRAY_SCHEME_PER_TENSOR;
    q.scale = 0.5f;
    q.zero_point = -3;
    s.quantization = &q;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK(v.flags == HURRAY_FLAG_HAS_QUANTIZATION);
    CHECK_STATUS(hurray_tensor_quantization(&v, &got), HURRAY_OK);
    CHECK(got.scheme_tag == HURRAY_SCHEME_PER_TENSOR && got.scale == 0.5f && got.zero_point == -3);
    CHECK(got.scheme_version == 1 && got.zero_point_buffer == HURRAY_NO_BUFFER && got.padding == 0);
    q.padding = 4; /* writer padding is kept */
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK_STATUS(hurray_tensor_quantization(&v, &got), HURRAY_OK);
    CHECK(got.padding == 4);
    q.padding = 0;
    q.scale = 0.0f;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_PARAMETER_OUT_OF_RANGE);
    q.scale = 1.0f;
    q.zero_point = 300;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_PARAMETER_OUT_OF_RANGE);
    q.zero_point = 0;
    s.element_type = HURRAY_TYPE_FLOAT32;
    hurray_buffer_handle b16[] = { cpu(16) };
    s.buffers = b16;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_STORAGE_TYPE_NOT_ALLOWED);
    CHECK(err.value == HURRAY_TYPE_FLOAT32 && err.index == HURRAY_SCHEME_PER_TENSOR);
    q.scheme_tag = 0x09;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_INVALID_VALUE);

    /* Per-channel int8 [3, 4], symmetric: 3 float32 scales in buffer 1. */
    uint64_t s34[] = { 3, 4 };
    hurray_buffer_handle pc[] = { cpu(12), cpu(12) };
    s = spec(HURRAY_TYPE_INT8, HURRAY_LAYOUT_ROW_MAJOR, 2, s34, pc, 2);
    memset(&q, 0, sizeof q);
    q.scheme_tag = HURRAY_SCHEME_PER_CHANNEL;
    q.axis = 0;
    q.scale_buffer = 1;
    q.zero_point_buffer = HURRAY_NO_BUFFER;
    s.quantization = &q;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK_STATUS(hurray_tensor_quantization(&v, &got), HURRAY_OK);
    CHECK(got.axis == 0 && got.scale_buffer == 1 && got.zero_point_buffer == HURRAY_NO_BUFFER);
    CHECK(got.flags == 1 && got.scale_type == HURRAY_TYPE_FLOAT32);
    q.axis = 2;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_AXIS_OUT_OF_RANGE);
    CHECK(err.value == 2 && err.expected == 2);
    q.axis = 0;
    q.scale_buffer = 0;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_PARAMETER_BUFFER_INDEX);
    CHECK(err.value == 0 && err.index == 1 && err.expected == 2);

    /* Per-block int4 [2, 64], blocks of 32 along axis 1, float16 scales and
     * int32 zero points in their own buffers. */
    uint64_t s264[] = { 2, 64 };
    hurray_buffer_handle pb[] = { cpu(64), cpu(8), cpu(16) };
    s = spec(HURRAY_TYPE_INT4, HURRAY_LAYOUT_ROW_MAJOR, 2, s264, pb, 3);
    memset(&q, 0, sizeof q);
    q.scheme_tag = HURRAY_SCHEME_PER_BLOCK;
    q.axis = 1;
    q.block_size = 32;
    q.scale_buffer = 1;
    q.zero_point_buffer = 2;
    q.scale_type = HURRAY_TYPE_FLOAT16;
    s.quantization = &q;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK(v.element_bits == 4);
    CHECK_STATUS(hurray_tensor_quantization(&v, &got), HURRAY_OK);
    CHECK(got.block_size == 32 && got.zero_point_buffer == 2 && got.scale_type == HURRAY_TYPE_FLOAT16 && got.flags == 0);
    pb[1] = cpu(16);
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_BUFFER_SIZE_MISMATCH);
    CHECK(err.index == 1 && err.value == 16 && err.expected == 8);
    pb[1] = cpu(8);
    q.scale_type = HURRAY_TYPE_INT8;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_INVALID_VALUE);

    /* NF4 uint4 [64], one block: one float32 absmax. */
    uint64_t s64[] = { 64 };
    hurray_buffer_handle nf[] = { cpu(32), cpu(4) };
    s = spec(HURRAY_TYPE_UINT4, HURRAY_LAYOUT_ROW_MAJOR, 1, s64, nf, 2);
    memset(&q, 0, sizeof q);
    q.scheme_tag = HURRAY_SCHEME_NF4;
    q.block_size = 64;
    q.scale_buffer = 1;
    q.zero_point_buffer = HURRAY_NO_BUFFER;
    s.quantization = &q;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK_STATUS(hurray_tensor_quantization(&v, &got), HURRAY_OK);
    CHECK(got.scheme_tag == HURRAY_SCHEME_NF4 && got.scale_type == HURRAY_TYPE_FLOAT32);

    /* MXFP float8_e4m3 [64], blocks of 32: two E8M0 scales. */
    hurray_buffer_handle mx[] = { cpu(64), cpu(2) };
    s = spec(HURRAY_TYPE_FLOAT8_E4M3, HURRAY_LAYOUT_ROW_MAJOR, 1, s64, mx, 2);
    q.scheme_tag = HURRAY_SCHEME_MXFP;
    q.block_size = 32;
    s.quantization = &q;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK_STATUS(hurray_tensor_quantization(&v, &got), HURRAY_OK);
    CHECK(got.scheme_tag == HURRAY_SCHEME_MXFP && got.scale_type == HURRAY_TYPE_FLOAT8_E8M0);

    /* A private scheme: opaque bytes, accepted only when agreed. */
    static const uint8_t payload[] = { 1, 2, 3, 4 };
    hurray_buffer_handle pv[] = { cpu(64) };
    s = spec(HURRAY_TYPE_UINT8, HURRAY_LAYOUT_ROW_MAJOR, 1, s64, pv, 1);
    memset(&q, 0, sizeof q);
    q.scheme_tag = 0xF1;
    q.scheme_version = 3;
    q.flags = 0x8001;
    q.payload = payload;
    q.payload_len = 4;
    s.quantization = &q;
    n = encode_ok(&s, buf, sizeof buf);
    CHECK_STATUS(hurray_tensor_parse(buf, n, &v, &err), HURRAY_E_PRIVATE_CODE_REFUSED);
    CHECK(err.value == 0xF1);
    hurray_read_options schemes = { NULL, 0, 1, 0 };
    v = parse_ok(buf, n, &schemes);
    CHECK_STATUS(hurray_tensor_quantization(&v, &got), HURRAY_OK);
    CHECK(got.scheme_tag == 0xF1 && got.scheme_version == 3 && got.flags == 0x8001);
    CHECK(got.payload_len == 4 && memcmp(got.payload, payload, 4) == 0);
}

static void test_sections(void) {
    hurray_tensor_view v;
    hurray_error err;
    size_t n;

    /* A shard of rows 2..3 of an [8, 4] parent. */
    uint64_t s24[] = { 2, 4 }, parent[] = { 8, 4 }, offset[] = { 2, 0 };
    hurray_buffer_handle b32[] = { cpu(32) };
    hurray_descriptor_spec s = spec(HURRAY_TYPE_FLOAT32, HURRAY_LAYOUT_ROW_MAJOR, 2, s24, b32, 1);
    s.parent_shape = parent;
    s.shard_offset = offset;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    uint64_t p[2], o[2];
    CHECK_STATUS(hurray_tensor_shard(&v, p, o, 2), HURRAY_OK);
    CHECK(p[0] == 8 && p[1] == 4 && o[0] == 2 && o[1] == 0);
    CHECK_STATUS(hurray_tensor_shard(&v, p, o, 1), HURRAY_E_OUTPUT_TOO_SMALL);
    CHECK_STATUS(hurray_tensor_shard(&v, p, NULL, 2), HURRAY_E_NULL);
    offset[0] = 7;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_SHARD_OUT_OF_BOUNDS);
    CHECK(err.index == 0);
    offset[0] = 2;
    parent[1] = HURRAY_DYNAMIC;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_DYNAMIC_DIMENSION);
    CHECK(err.index == 1);
    parent[1] = 4;
    s.shard_offset = NULL;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_NULL);

    /* Statistics. */
    hurray_statistics st, got;
    memset(&st, 0, sizeof st);
    st.computed_mask = HURRAY_STAT_NNZ | HURRAY_STAT_RANGE | HURRAY_STAT_MOMENTS | HURRAY_STAT_NM | HURRAY_STAT_NAN_INF;
    st.nnz = 6;
    st.value_min = -1.0;
    st.value_max = 3.0;
    st.value_mean = 0.5;
    st.value_stddev = 1.25;
    st.nm_n = 2;
    st.nm_m = 4;
    st.has_inf = 1;
    s = spec(HURRAY_TYPE_FLOAT32, HURRAY_LAYOUT_ROW_MAJOR, 2, s24, b32, 1);
    s.statistics = &st;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK(v.flags == HURRAY_FLAG_HAS_STATISTICS);
    CHECK_STATUS(hurray_tensor_statistics(&v, &got), HURRAY_OK);
    CHECK(got.computed_mask == st.computed_mask && got.nnz == 6 && got.value_abs_max == 3.0);
    CHECK(got.value_min == -1.0 && got.value_stddev == 1.25 && got.nm_n == 2 && got.has_inf == 1 && got.has_nan == 0);
    st.value_min = 5.0;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_STATISTICS_INCONSISTENT);
    st.value_min = -1.0;
    st.computed_mask |= 1u << 9;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_RESERVED_FLAGS);
    CHECK(err.value == 1u << 9);

    /* A private element type: 4-bit signed integers, two per byte. */
    uint64_t s10[] = { 10 };
    hurray_buffer_handle b5[] = { cpu(5) };
    hurray_extension_type ext, ext_got;
    memset(&ext, 0, sizeof ext);
    ext.bit_width = 4;
    ext.is_signed = 1;
    s = spec(0xF0, HURRAY_LAYOUT_ROW_MAJOR, 1, s10, b5, 1);
    s.extension_type = &ext;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK(v.element_type == 0xF0 && v.element_bits == 4 && v.flags == HURRAY_FLAG_HAS_EXTENSION_TYPE);
    CHECK(hurray_element_type_bits(0xF0) == 0);
    CHECK_STATUS(hurray_tensor_extension_type(&v, &ext_got), HURRAY_OK);
    CHECK(ext_got.bit_width == 4 && ext_got.packing_factor == 2 && ext_got.is_signed == 1 && ext_got.is_float == 0);
    s.extension_type = NULL;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_EXTENSION_TYPE_MISMATCH);
    CHECK(err.value == 0xF0 && err.index == 0);
    /* A private 8-bit float (1 sign, 4 exponent, 3 mantissa bits). */
    memset(&ext, 0, sizeof ext);
    ext.bit_width = 8; ext.is_float = 1; ext.sign_bits = 1; ext.exponent_bits = 4;
    ext.mantissa_bits = 3; ext.exponent_bias = 7; ext.has_nan = 1;
    hurray_buffer_handle b10[] = { cpu(10) };
    s = spec(0xF2, HURRAY_LAYOUT_ROW_MAJOR, 1, s10, b10, 1);
    s.extension_type = &ext;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK_STATUS(hurray_tensor_extension_type(&v, &ext_got), HURRAY_OK);
    CHECK(ext_got.is_float == 1 && ext_got.exponent_bias == 7 && ext_got.has_nan == 1 && ext_got.packing_factor == 1);
    ext.bit_width = 3;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_INVALID_VALUE);
    CHECK(err.value == 3);

    /* The composite member section of an overlay's base member. */
    s = spec(HURRAY_TYPE_FLOAT32, HURRAY_LAYOUT_ROW_MAJOR, 2, s24, b32, 1);
    s.member_role = HURRAY_MEMBER_BASE;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK(v.member_role == HURRAY_MEMBER_BASE && v.flags == HURRAY_FLAG_HAS_COMPOSITE_MEMBER);
    s.member_role = 7;
    CHECK_STATUS(hurray_descriptor_encode(&s, buf, sizeof buf, &n, &err), HURRAY_E_INVALID_VALUE);

    /* Every section at once, in the format's order. */
    hurray_quantization q;
    memset(&q, 0, sizeof q);
    q.scheme_tag = HURRAY_SCHEME_PER_TENSOR;
    q.scale = 2.0f;
    q.zero_point_buffer = HURRAY_NO_BUFFER;
    memset(&st, 0, sizeof st);
    st.computed_mask = HURRAY_STAT_SPARSITY;
    st.sparsity_ratio = 0.25;
    hurray_buffer_handle b8[] = { cpu(8) };
    s = spec(HURRAY_TYPE_INT8, HURRAY_LAYOUT_ROW_MAJOR, 2, s24, b8, 1);
    s.quantization = &q;
    s.parent_shape = parent;
    s.shard_offset = offset;
    s.statistics = &st;
    s.member_role = HURRAY_MEMBER_CORRECTION;
    n = encode_ok(&s, buf, sizeof buf);
    v = parse_ok(buf, n, NULL);
    CHECK(v.flags == (HURRAY_FLAG_HAS_QUANTIZATION | HURRAY_FLAG_HAS_SHARD | HURRAY_FLAG_HAS_STATISTICS |
                      HURRAY_FLAG_HAS_COMPOSITE_MEMBER));
    CHECK(v.member_role == HURRAY_MEMBER_CORRECTION);
}

/* A stream of two descriptors, read with the prefix parser. */
static void test_stream(void) {
    alignas(8) uint8_t d[160];
    size_t first = worked_example(d);
    uint64_t s4[] = { 4 };
    hurray_buffer_handle b4[] = { cpu(4) };
    hurray_descriptor_spec s = spec(HURRAY_TYPE_UINT8, HURRAY_LAYOUT_ROW_MAJOR, 1, s4, b4, 1);
    size_t second = 0;
    CHECK_STATUS(hurray_descriptor_encode(&s, d + first, sizeof d - first, &second, NULL), HURRAY_OK);
    hurray_tensor_view a, b;
    CHECK_STATUS(hurray_tensor_parse_prefix(d, first + second, &a, NULL), HURRAY_OK);
    CHECK(a.len == first && a.element_type == HURRAY_TYPE_FLOAT32);
    CHECK_STATUS(hurray_tensor_parse_prefix(a.bytes + a.len, first + second - a.len, &b, NULL), HURRAY_OK);
    CHECK(b.len == second && b.element_type == HURRAY_TYPE_UINT8);
}

/* ------------------------------------------------------------------------ */
/* DLPack and Arrow.                                                          */

static void test_interop(void) {
    int32_t code;
    uint8_t dev, cls;
    CHECK_STATUS(hurray_to_dlpack_device(HURRAY_DEVICE_CPU, HURRAY_MEMORY_STANDARD, &code), HURRAY_OK);
    CHECK(code == 1); /* kDLCPU */
    CHECK_STATUS(hurray_to_dlpack_device(HURRAY_DEVICE_CUDA, HURRAY_MEMORY_HOST_PINNED, &code), HURRAY_OK);
    CHECK(code == 3); /* kDLCUDAHost */
    CHECK_STATUS(hurray_to_dlpack_device(HURRAY_DEVICE_LEVEL_ZERO, HURRAY_MEMORY_STANDARD, &code), HURRAY_OK);
    CHECK(code == 14); /* kDLOneAPI */
    CHECK_STATUS(hurray_from_dlpack_device(13, &dev, &cls), HURRAY_OK); /* kDLCUDAManaged */
    CHECK(dev == HURRAY_DEVICE_CUDA && cls == HURRAY_MEMORY_UNIFIED);
    CHECK_STATUS(hurray_from_dlpack_device(1, &dev, &cls), HURRAY_OK);
    CHECK(dev == HURRAY_DEVICE_CPU && cls == HURRAY_MEMORY_STANDARD);
    hurray_error unused;
    (void)unused;
    CHECK_STATUS(hurray_to_dlpack_device(0xF1, HURRAY_MEMORY_STANDARD, &code), HURRAY_E_NO_INTEROP_CODE);
    CHECK_STATUS(hurray_from_dlpack_device(9, &dev, &cls), HURRAY_E_UNKNOWN_INTEROP_CODE); /* kDLVPI */
    CHECK_STATUS(hurray_to_arrow_device(HURRAY_DEVICE_ROCM, HURRAY_MEMORY_STANDARD, &code), HURRAY_OK);
    CHECK(code == 10);
    CHECK_STATUS(hurray_from_arrow_device(17, &dev, &cls), HURRAY_E_UNKNOWN_INTEROP_CODE);
    CHECK_STATUS(hurray_from_arrow_device(11, &dev, &cls), HURRAY_OK);
    CHECK(dev == HURRAY_DEVICE_ROCM && cls == HURRAY_MEMORY_HOST_PINNED);
    CHECK_STATUS(hurray_to_dlpack_device(0x09, 0, &code), HURRAY_E_INVALID_DEVICE_TAG);
    CHECK_STATUS(hurray_to_dlpack_device(HURRAY_DEVICE_CPU, 0x99, &code), HURRAY_E_INVALID_MEMORY_CLASS);
    CHECK_STATUS(hurray_to_dlpack_device(HURRAY_DEVICE_CPU, 0, NULL), HURRAY_E_NULL);
    CHECK_STATUS(hurray_from_dlpack_device(1, NULL, &cls), HURRAY_E_NULL);

    /* The device table: every valid named pair, and what the functions say. */
    size_t valid_named = 0;
    for (unsigned d = 0; d <= HURRAY_DEVICE_OPENCL; d++)
        for (unsigned c = 0; c <= HURRAY_MEMORY_PEER_TO_PEER; c++) valid_named += (size_t)allowed(d, c);
    CHECK(valid_named == HURRAY_DEVICE_MAPPING_COUNT);
    int rows_ok = 1;
    for (size_t i = 0; i < HURRAY_DEVICE_MAPPING_COUNT; i++) {
        const hurray_device_mapping *m = &HURRAY_DEVICE_MAPPINGS[i];
        int32_t dl = -1, ar = -1;
        if (!allowed(m->device_tag, m->memory_class)) rows_ok = 0;
        if (hurray_to_dlpack_device(m->device_tag, m->memory_class, &dl) != HURRAY_OK || dl != m->dlpack) rows_ok = 0;
        if (hurray_to_arrow_device(m->device_tag, m->memory_class, &ar) != HURRAY_OK || ar != m->arrow) rows_ok = 0;
        /* Import gives the canonical pair, which exports to the same code. */
        if (hurray_from_dlpack_device(m->dlpack, &dev, &cls) != HURRAY_OK) rows_ok = 0;
        if (hurray_to_dlpack_device(dev, cls, &dl) != HURRAY_OK || dl != m->dlpack) rows_ok = 0;
        if (i > 0 && HURRAY_DEVICE_MAPPINGS[i - 1].device_tag > m->device_tag) rows_ok = 0;
    }
    CHECK(rows_ok);

    /* Element types. */
    uint8_t dl_code, bits, type;
    uint16_t lanes;
    CHECK_STATUS(hurray_to_dlpack_dtype(HURRAY_TYPE_BFLOAT16, &dl_code, &bits, &lanes), HURRAY_OK);
    CHECK(dl_code == 4 && bits == 16 && lanes == 1); /* kDLBfloat */
    CHECK_STATUS(hurray_to_dlpack_dtype(HURRAY_TYPE_INT4, &dl_code, &bits, &lanes), HURRAY_OK);
    CHECK(dl_code == 0 && bits == 4);
    CHECK_STATUS(hurray_to_dlpack_dtype(HURRAY_TYPE_BOOL, &dl_code, &bits, &lanes), HURRAY_E_NO_INTEROP_CODE);
    CHECK_STATUS(hurray_to_dlpack_dtype(0xF0, &dl_code, &bits, &lanes), HURRAY_E_NO_INTEROP_CODE);
    CHECK_STATUS(hurray_to_dlpack_dtype(0x47, &dl_code, &bits, &lanes), HURRAY_E_INVALID_TYPE_TAG);
    CHECK_STATUS(hurray_from_dlpack_dtype(2, 32, 1, &type), HURRAY_OK);
    CHECK(type == HURRAY_TYPE_FLOAT32);
    CHECK_STATUS(hurray_from_dlpack_dtype(2, 32, 4, &type), HURRAY_E_UNKNOWN_INTEROP_CODE);
    CHECK_STATUS(hurray_from_dlpack_dtype(2, 32, 1, NULL), HURRAY_E_NULL);
    int dtypes_ok = 1;
    for (size_t i = 0; i < HURRAY_DTYPE_MAPPING_COUNT; i++) {
        const hurray_dtype_mapping *m = &HURRAY_DTYPE_MAPPINGS[i];
        if (hurray_from_dlpack_dtype(m->code, m->bits, m->lanes, &type) != HURRAY_OK || type != m->element_type) dtypes_ok = 0;
        if (hurray_element_type_bits(m->element_type) != m->bits) dtypes_ok = 0;
        if (m->lanes != 1) dtypes_ok = 0;
    }
    CHECK(dtypes_ok);
    CHECK(hurray_element_type_bits(HURRAY_TYPE_FLOAT6_E2M3) == 6 && hurray_element_type_bits(0x47) == 0);
    CHECK(hurray_element_type_alignment(HURRAY_TYPE_COMPLEX128) == 8);
    CHECK(hurray_element_type_alignment(HURRAY_TYPE_INT4) == 1 && hurray_element_type_alignment(0xF0) == 0);
}

static void test_messages(void) {
    CHECK(hurray_abi_version() == HURRAY_ABI_VERSION && HURRAY_ABI_VERSION == (2u << 16));
    CHECK(strcmp(hurray_status_message(HURRAY_OK), "ok") == 0);
    int all_named = 1, all_distinct = 1;
    for (hurray_status s = HURRAY_STATUS_MIN; s <= HURRAY_OK; s++) {
        const char *m = hurray_status_message(s);
        if (m == NULL || strlen(m) == 0 || strcmp(m, "unknown status code") == 0) all_named = 0;
        for (hurray_status t = HURRAY_STATUS_MIN; t < s; t++)
            if (strcmp(m, hurray_status_message(t)) == 0) all_distinct = 0;
    }
    CHECK(all_named);
    CHECK(all_distinct);
    CHECK(strcmp(hurray_status_message(HURRAY_STATUS_MIN - 1), "unknown status code") == 0);
    CHECK(strcmp(hurray_status_message(1), "unknown status code") == 0);
}

int main(void) {
    test_handles();
    test_validity();
    test_pointers();
    test_table();
    test_worked_example();
    test_header_errors();
    test_dense_layouts();
    test_sparse_layouts();
    test_other_layouts();
    test_quantization();
    test_sections();
    test_stream();
    test_interop();
    test_messages();
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
