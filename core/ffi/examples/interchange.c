/*
 * hurray <-> DLPack <-> Arrow from C: describe a C array, export it as a
 * DLPack managed tensor and as an Arrow C Device array, and import both
 * back the way a consumer would. Built and run by CI:
 *   cc -std=c11 -Wall -Wextra -Werror -Icore/ffi/include -Icore/interop/include/vendor \
 *      core/ffi/examples/interchange.c target/debug/libhurray_c.a -lpthread -ldl -lm
 */
#include <stdalign.h>
#include <stdio.h>

#include "arrow/c/abi.h"
#include "dlpack/dlpack.h"
#include "hurray.h"

static alignas(64) float matrix[3][4];
static int released = 0;

/* Called once per export, when the last consumer is done with `matrix`. */
static void release_matrix(void *ctx) {
    (void)ctx;
    released++;
}

static int fail(const char *what, hurray_status s) {
    fprintf(stderr, "%s: %d (%s)\n", what, s, hurray_interop_status_message(s));
    return 1;
}

int main(void) {
    for (int i = 0; i < 12; i++) matrix[i / 4][i % 4] = (float)i;

    /* 1. Describe: float32 (type tag 0x03) [3, 4] row-major, CPU memory. */
    uint8_t desc[HURRAY_INTEROP_MAX_DESCRIPTOR_LEN];
    size_t desc_len;
    void *base;
    const int64_t shape[2] = {3, 4};
    hurray_status s = hurray_describe_strided(0x03, 2, shape, NULL, matrix, 0x00, 0, 0, desc,
                                              sizeof desc, &desc_len, &base);
    if (s != HURRAY_OK) return fail("describe", s);

    /* 2. DLPack export: what a __dlpack__ would put in its capsule. */
    void *out;
    s = hurray_dlpack_export(desc, desc_len, base, 0, 0, NULL, release_matrix, &out);
    if (s != HURRAY_OK) return fail("dlpack export", s);
    struct DLManagedTensorVersioned *m = out;
    printf("DLPack %u.%u: ndim %d, dtype (%u, %u, %u), device %d, read-only %d\n",
           m->version.major, m->version.minor, m->dl_tensor.ndim, m->dl_tensor.dtype.code,
           m->dl_tensor.dtype.bits, m->dl_tensor.dtype.lanes, (int)m->dl_tensor.device.device_type,
           (int)(m->flags & DLPACK_FLAG_BITMASK_READ_ONLY));

    /* 3. DLPack import: a consumer takes the managed tensor (no allocation). */
    uint8_t imported_desc[HURRAY_INTEROP_MAX_DESCRIPTOR_LEN];
    hurray_import imp;
    s = hurray_dlpack_import(m, 0, 0, imported_desc, sizeof imported_desc, &imp);
    if (s != HURRAY_OK) return fail("dlpack import", s);
    const float *values = imp.first_element;
    printf("imported: %u dims, type tag 0x%02x, element [2][3] = %.1f\n", imp.ndim, imp.type_tag,
           values[2 * 4 + 3]);
    hurray_import_release(&imp); /* calls the deleter, which calls release_matrix */

    /* 4. Arrow: a fixed_shape_tensor array (3 rows of [4]) and back. */
    struct ArrowDeviceArray array;
    struct ArrowSchema schema;
    s = hurray_arrow_export(desc, desc_len, base, -1, NULL, NULL, release_matrix, &array, &schema);
    if (s != HURRAY_OK) return fail("arrow export", s);
    printf("Arrow: format %s of %s, length %lld, device type %d\n", schema.format,
           schema.children[0]->format, (long long)array.array.length, (int)array.device_type);
    s = hurray_arrow_import(&array, &schema, imported_desc, sizeof imported_desc, &imp);
    if (s != HURRAY_OK) return fail("arrow import", s);
    hurray_import_release(&imp); /* both release callbacks run */

    printf("owner released %d times (once per export)\n", released);
    return released == 2 ? 0 : 1;
}
