/*
 * C test of the hurray C ABI for files and streams. Built by CI with
 *   cc -Wall -Wextra -Werror -std=c11 -Icore/ffi/include core/ffi/tests/test_containers.c \
 *      target/debug/libhurray_c.a -lpthread -ldl -lm   (after `cargo build -p hurray-rs-clib`)
 * and linked with malloc/calloc/realloc wrapped to fail the test: no
 * function of the file or stream ABI allocates.
 * Prints "N passed, 0 failed" and exits 0 on success.
 *
 * Writes a stream and a file of four tensors (one a group composite of two
 * members) with the writer ABI into static buffers, reads them back with the
 * stream decoder (fed in chunks of every size from 1 to 64 bytes) and the file
 * view, and checks hostile variants get typed errors with their offsets.
 */
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hurray.h"

static int passed = 0, failed = 0, allocations = 0;

/* Every allocation is counted: the ABI under test must make none. */
void *__real_malloc(size_t);
void *__wrap_malloc(size_t n) { allocations++; return __real_malloc(n); }
void *__real_calloc(size_t, size_t);
void *__wrap_calloc(size_t a, size_t b) { allocations++; return __real_calloc(a, b); }
void *__real_realloc(void *, size_t);
void *__wrap_realloc(void *p, size_t n) { allocations++; return __real_realloc(p, n); }

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

/* The four tensors: a float32 [3], a group head of 2 members (uint8 [4] and
 * int16 [2, 2]), each dense row-major in one CPU buffer. */
#define TENSORS 4
static uint8_t desc[TENSORS][256];
static size_t desc_len[TENSORS];
static hurray_tensor_view views[TENSORS];
static uint8_t data0[12], data2[4], data3[8];
static const uint8_t *const data_of[TENSORS] = {data0, NULL, data2, data3};
static const size_t size_of_data[TENSORS] = {12, 0, 4, 8};
static const char *const names[TENSORS] = {"w", "pair", "pair.a", "pair.b"};

static void make_tensor(int i, uint8_t type, uint8_t layout, uint32_t rank, const uint64_t *shape,
                        uint64_t bytes) {
    hurray_buffer_handle h;
    uint32_t count = 0;
    if (layout != HURRAY_LAYOUT_COMPOSITE) {
        CHECK_STATUS(hurray_handle_new(bytes, 64, HURRAY_DEVICE_CPU, HURRAY_SYNC_PRODUCER_SYNCED, 0, &h, NULL),
                     HURRAY_OK);
        count = 1;
    }
    hurray_descriptor_spec s;
    memset(&s, 0, sizeof s);
    s.element_type = type;
    s.layout.tag = layout;
    if (layout == HURRAY_LAYOUT_COMPOSITE) {
        s.layout.composition_rule = 3; /* group */
        s.layout.member_count = 2;
    }
    s.rank = rank;
    s.shape = shape;
    s.buffers = &h;
    s.buffer_count = count;
    s.member_role = HURRAY_MEMBER_NONE;
    CHECK_STATUS(hurray_descriptor_encode(&s, desc[i], sizeof desc[i], &desc_len[i], NULL), HURRAY_OK);
    CHECK_STATUS(hurray_tensor_parse(desc[i], desc_len[i], &views[i], NULL), HURRAY_OK);
}

static void make_tensors(void) {
    static const uint64_t s3[] = {3}, s1[] = {1}, s4[] = {4}, s22[] = {2, 2};
    make_tensor(0, HURRAY_TYPE_FLOAT32, HURRAY_LAYOUT_ROW_MAJOR, 1, s3, 12);
    make_tensor(1, HURRAY_TYPE_FLOAT32, HURRAY_LAYOUT_COMPOSITE, 1, s1, 0);
    make_tensor(2, HURRAY_TYPE_UINT8, HURRAY_LAYOUT_ROW_MAJOR, 1, s4, 4);
    make_tensor(3, HURRAY_TYPE_INT16, HURRAY_LAYOUT_ROW_MAJOR, 2, s22, 8);
    for (int i = 0; i < 12; i++) data0[i] = (uint8_t)(i * 7 + 1);
    for (int i = 0; i < 4; i++) data2[i] = (uint8_t)(200 + i);
    for (int i = 0; i < 8; i++) data3[i] = (uint8_t)(i * 31);
}

/* ------------------------------------------------------------------------ */
/* Streams.                                                                  */

static uint8_t stream[2048];
static size_t stream_len;

static void test_stream_writer(void) {
    static hurray_stream_writer w;
    static uint8_t scratch[256];
    CHECK_STATUS(hurray_stream_writer_init(&w, stream, sizeof stream, scratch, sizeof scratch), HURRAY_OK);
    for (int i = 0; i < TENSORS; i++) {
        const uint8_t *bufs[1] = {data_of[i]};
        size_t lens[1] = {size_of_data[i]};
        CHECK_STATUS(hurray_stream_write_tensor(&w, &views[i], bufs, lens, views[i].buffer_count, NULL),
                     HURRAY_OK);
    }
    CHECK_STATUS(hurray_stream_writer_finish(&w, &stream_len, NULL), HURRAY_OK);
    size_t expected = 0;
    for (int i = 0; i < TENSORS; i++) expected += desc_len[i] + size_of_data[i];
    CHECK(stream_len == expected);
    CHECK(memcmp(stream, desc[0], desc_len[0]) == 0);
    CHECK(memcmp(stream + desc_len[0], data0, 12) == 0);

    /* Misuse: a buffer of the wrong size writes nothing. */
    static hurray_stream_writer w2;
    static uint8_t out2[64];
    CHECK_STATUS(hurray_stream_writer_init(&w2, out2, sizeof out2, NULL, 0), HURRAY_OK);
    const uint8_t *bufs[1] = {data0};
    size_t short_len[1] = {11};
    hurray_error err;
    CHECK_STATUS(hurray_stream_write_tensor(&w2, &views[0], bufs, short_len, 1, &err), HURRAY_E_WRITER_MISUSE);
    CHECK(err.status == HURRAY_E_WRITER_MISUSE);
    /* A full output. */
    size_t full_len[1] = {12};
    CHECK_STATUS(hurray_stream_write_tensor(&w2, &views[0], bufs, full_len, 1, NULL), HURRAY_E_OUTPUT_TOO_SMALL);
    /* A composite left open cannot finish. */
    static hurray_stream_writer w3;
    static uint8_t out3[512];
    CHECK_STATUS(hurray_stream_writer_init(&w3, out3, sizeof out3, NULL, 0), HURRAY_OK);
    CHECK_STATUS(hurray_stream_write_tensor(&w3, &views[1], NULL, NULL, 0, NULL), HURRAY_OK);
    size_t n;
    CHECK_STATUS(hurray_stream_writer_finish(&w3, &n, NULL), HURRAY_E_WRITER_MISUSE);
    /* An uninitialised writer is refused. */
    static hurray_stream_writer zero;
    CHECK_STATUS(hurray_stream_writer_finish(&zero, &n, NULL), HURRAY_E_INVALID_VIEW);
}

/* Decodes `bytes` in chunks of `chunk` bytes; returns the status of the
 * first failure (or of finish), and checks every event against the tensors. */
static hurray_status decode_in_chunks(const uint8_t *bytes, size_t len, size_t chunk, hurray_error *err) {
    static hurray_stream_decoder d;
    static uint8_t dbuf[256], scratch[256];
    CHECK_STATUS(hurray_stream_init(&d, dbuf, sizeof dbuf, scratch, sizeof scratch), HURRAY_OK);
    int tensor = -1, ends = 0, composites = 0;
    uint64_t got = 0;
    for (size_t at = 0; at < len; at += chunk) {
        const uint8_t *in = bytes + at;
        size_t left = len - at < chunk ? len - at : chunk;
        for (;;) {
            size_t used = 0;
            hurray_stream_event ev;
            hurray_status s = hurray_stream_decode(&d, in, left, &used, &ev, err);
            if (s != HURRAY_OK) return s;
            in += used;
            left -= used;
            if (ev.kind == HURRAY_EVENT_NEED_MORE) break;
            if (ev.kind == HURRAY_EVENT_DESCRIPTOR) {
                tensor++;
                got = 0;
                if (tensor < TENSORS) {
                    CHECK(ev.descriptor.len == desc_len[tensor]);
                    CHECK(ev.descriptor.element_type == views[tensor].element_type);
                    CHECK(memcmp(ev.descriptor.bytes, desc[tensor], desc_len[tensor]) == 0);
                }
            } else if (ev.kind == HURRAY_EVENT_DATA) {
                if (tensor >= 0 && tensor < TENSORS) {
                    CHECK(ev.buffer == 0 && ev.offset == got && ev.len > 0);
                    CHECK(got + ev.len <= size_of_data[tensor]);
                    if (got + ev.len <= size_of_data[tensor])
                        CHECK(memcmp(ev.data, data_of[tensor] + got, ev.len) == 0);
                }
                got += ev.len;
            } else if (ev.kind == HURRAY_EVENT_TENSOR_END) {
                if (tensor >= 0 && tensor < TENSORS) CHECK(got == size_of_data[tensor]);
                ends++;
            } else if (ev.kind == HURRAY_EVENT_COMPOSITE_END) {
                CHECK(ev.members == 2);
                composites++;
            }
        }
    }
    hurray_status s = hurray_stream_finish(&d, err);
    if (s == HURRAY_OK) {
        CHECK(tensor == TENSORS - 1 && ends == TENSORS && composites == 1);
    }
    return s;
}

static void test_stream_decoder(void) {
    for (size_t chunk = 1; chunk <= 64; chunk++) {
        hurray_error err;
        CHECK_STATUS(decode_in_chunks(stream, stream_len, chunk, &err), HURRAY_OK);
    }
    /* Truncated inside the second tensor's composite: the end is refused,
     * at the end of the input. */
    hurray_error err;
    memset(&err, 0, sizeof err);
    size_t cut = desc_len[0] + 12 + desc_len[1] + 2;
    CHECK_STATUS(decode_in_chunks(stream, cut, 7, &err), HURRAY_E_INVALID_STREAM);
    CHECK(err.status == HURRAY_E_INVALID_STREAM && err.value == cut && err.index == 2);
    /* A bad magic in the second tensor: its stream offset and index. */
    static uint8_t bad[2048];
    memcpy(bad, stream, stream_len);
    bad[desc_len[0] + 12] = 'X';
    memset(&err, 0, sizeof err);
    CHECK_STATUS(decode_in_chunks(bad, stream_len, 5, &err), HURRAY_E_INVALID_STREAM);
    CHECK(err.value == desc_len[0] + 12 && err.offset == desc_len[0] + 12 && err.index == 1);
    /* Misuse. */
    size_t used;
    hurray_stream_event ev;
    static hurray_stream_decoder zero;
    CHECK_STATUS(hurray_stream_decode(&zero, stream, 1, &used, &ev, NULL), HURRAY_E_INVALID_VIEW);
    CHECK_STATUS(hurray_stream_decode(NULL, stream, 1, &used, &ev, NULL), HURRAY_E_NULL);
    CHECK_STATUS(hurray_stream_init(&zero, NULL, 16, NULL, 0), HURRAY_E_NULL);
}

/* ------------------------------------------------------------------------ */
/* Files.                                                                    */

static alignas(8) uint8_t file[32768];
static size_t file_len;

static void test_file_writer(void) {
    static hurray_file_writer w;
    static hurray_file_slot slots[TENSORS];
    hurray_file_writer_options o = {0, 1, 1}; /* default alignment, sorted, KV */
    CHECK_STATUS(hurray_file_writer_init(&w, &o, file, sizeof file, slots, TENSORS, NULL), HURRAY_OK);
    for (int i = 0; i < TENSORS; i++) {
        const uint8_t *bufs[1] = {data_of[i]};
        size_t lens[1] = {size_of_data[i]};
        CHECK_STATUS(hurray_file_write_tensor(&w, (const uint8_t *)names[i], strlen(names[i]), &views[i], bufs,
                                              lens, views[i].buffer_count, NULL),
                     HURRAY_OK);
    }
    hurray_kv kv[2];
    memset(kv, 0, sizeof kv);
    kv[0].key = (const uint8_t *)"producer";
    kv[0].key_len = 8;
    kv[0].tag = HURRAY_KV_STRING;
    kv[0].bytes = (const uint8_t *)"test_containers.c";
    kv[0].bytes_len = 17;
    kv[1].key = (const uint8_t *)"count";
    kv[1].key_len = 5;
    kv[1].tag = HURRAY_KV_UINT64;
    kv[1].u = TENSORS;
    CHECK_STATUS(hurray_file_writer_finish(&w, kv, 2, &file_len, NULL), HURRAY_OK);
    CHECK(file_len > 4096 && file_len < sizeof file);
    CHECK(memcmp(file, "HRRYFILE", 8) == 0);
    /* Used up: the writer cannot be used again. */
    size_t n;
    CHECK_STATUS(hurray_file_writer_finish(&w, NULL, 0, &n, NULL), HURRAY_E_INVALID_VIEW);

    /* More tensors than slots; a duplicate name; a small output. */
    static hurray_file_writer w2;
    static hurray_file_slot one[1];
    static uint8_t out2[16384];
    CHECK_STATUS(hurray_file_writer_init(&w2, NULL, out2, sizeof out2, one, 1, NULL), HURRAY_OK);
    const uint8_t *bufs[1] = {data0};
    size_t lens[1] = {12};
    CHECK_STATUS(hurray_file_write_tensor(&w2, (const uint8_t *)"a", 1, &views[0], bufs, lens, 1, NULL), HURRAY_OK);
    hurray_error err;
    CHECK_STATUS(hurray_file_write_tensor(&w2, (const uint8_t *)"a", 1, &views[0], bufs, lens, 1, &err),
                 HURRAY_E_WRITER_MISUSE);
    static hurray_file_writer w3;
    static uint8_t out3[100];
    CHECK_STATUS(hurray_file_writer_init(&w3, NULL, out3, sizeof out3, one, 1, NULL), HURRAY_OK);
    CHECK_STATUS(hurray_file_write_tensor(&w3, (const uint8_t *)"a", 1, &views[0], bufs, lens, 1, NULL),
                 HURRAY_E_OUTPUT_TOO_SMALL);
}

static void test_file_view(void) {
    hurray_file f;
    hurray_error err;
    CHECK_STATUS(hurray_file_open(file, file_len, NULL, 0, &f, &err), HURRAY_OK);
    CHECK(f.tensor_count == TENSORS && f.alignment == 4096 && f.version_major == 1);
    CHECK((f.flags & HURRAY_FILE_FLAG_SORTED_INDEX) && (f.flags & HURRAY_FILE_FLAG_KV_METADATA));
    size_t table_len = 0;
    CHECK_STATUS(hurray_file_table_len(file, file_len, &table_len, NULL), HURRAY_OK);
    CHECK(table_len == 2 * TENSORS);
    static uint32_t table[2 * TENSORS];
    hurray_file ft;
    CHECK_STATUS(hurray_file_open(file, file_len, table, table_len, &ft, NULL), HURRAY_OK);

    /* Lookup by name, then its buffer's bytes: a pointer into the file. */
    for (int i = 0; i < TENSORS; i++) {
        hurray_file_tensor t;
        CHECK_STATUS(hurray_file_find(i % 2 ? &ft : &f, (const uint8_t *)names[i], strlen(names[i]), &t, NULL),
                     HURRAY_OK);
        CHECK(t.name_len == strlen(names[i]) && memcmp(t.name, names[i], t.name_len) == 0);
        CHECK(t.descriptor.len == desc_len[i] && memcmp(t.descriptor.bytes, desc[i], desc_len[i]) == 0);
        CHECK(t.descriptor_offset + desc_len[i] <= file_len);
        if (size_of_data[i]) {
            const uint8_t *p = NULL;
            uint64_t len = 0;
            CHECK_STATUS(hurray_file_buffer(&f, &t, 0, &p, &len), HURRAY_OK);
            CHECK(len == size_of_data[i] && memcmp(p, data_of[i], len) == 0);
            CHECK(p == file + t.data_offset && t.data_offset % 4096 == 0);
            CHECK_STATUS(hurray_file_buffer(&f, &t, 1, &p, &len), HURRAY_E_INDEX_OUT_OF_RANGE);
        }
    }
    hurray_file_tensor t;
    CHECK_STATUS(hurray_file_find(&f, (const uint8_t *)"nope", 4, &t, &err), HURRAY_E_NOT_FOUND);
    CHECK(err.status == HURRAY_E_NOT_FOUND);

    /* Iteration: by name (sorted index), and in file order. */
    const char *sorted[TENSORS] = {"pair", "pair.a", "pair.b", "w"};
    for (uint64_t i = 0; i < TENSORS; i++) {
        CHECK_STATUS(hurray_file_tensor_at(&f, i, 0, &t), HURRAY_OK);
        CHECK(t.name_len == strlen(sorted[i]) && memcmp(t.name, sorted[i], t.name_len) == 0);
        CHECK_STATUS(hurray_file_tensor_at(&f, i, 1, &t), HURRAY_OK);
        CHECK(t.name_len == strlen(names[i]) && memcmp(t.name, names[i], t.name_len) == 0);
    }
    CHECK_STATUS(hurray_file_tensor_at(&f, TENSORS, 0, &t), HURRAY_E_INDEX_OUT_OF_RANGE);

    /* Hostile: every truncation is refused with an offset inside the file;
     * a flipped index byte breaks the CRC. */
    for (size_t cut = 0; cut < file_len; cut += 61) {
        memset(&err, 0, sizeof err);
        CHECK_STATUS(hurray_file_open(file, cut, NULL, 0, &f, &err), HURRAY_E_INVALID_FILE);
        CHECK(err.value <= file_len);
    }
    static alignas(8) uint8_t bad[32768];
    memcpy(bad, file, file_len);
    bad[file_len - 48] ^= 1;
    CHECK_STATUS(hurray_file_open(bad, file_len, NULL, 0, &f, &err), HURRAY_E_INVALID_FILE);
    memcpy(bad, file, file_len);
    bad[0] = 'X';
    CHECK_STATUS(hurray_file_open(bad, file_len, NULL, 0, &f, &err), HURRAY_E_INVALID_FILE);
    CHECK(err.value == 0);
    CHECK_STATUS(hurray_file_open(NULL, 10, NULL, 0, &f, NULL), HURRAY_E_NULL);
    CHECK_STATUS(hurray_file_open(file, file_len, NULL, 0, NULL, NULL), HURRAY_E_NULL);
}

int main(void) {
    make_tensors();
    int before = allocations;
    test_stream_writer();
    test_stream_decoder();
    test_file_writer();
    test_file_view();
    CHECK(allocations == before);
    for (hurray_status s = HURRAY_E_WRITER_MISUSE; s <= HURRAY_E_INVALID_FILE; s++)
        CHECK(strcmp(hurray_status_message(s), "unknown status code") != 0);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
