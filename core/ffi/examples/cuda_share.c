/*
 * A compiled consumer of hurray's share protocol (docs/impl/gpu-share.md):
 * it drives gpu/examples/share_peer (a Vulkan producer), reads one share
 * message (56-byte header, descriptor, the memory's fd by SCM_RIGHTS),
 * validates all of it with hurray's C ABI before the fd is used, imports
 * the memory into CUDA and reads its first word, as a C or C++ application
 * would. tests/python/cuda_share.py does the same from Python and PyTorch;
 * this program shows what sharing costs without an interpreter in the way.
 *
 * CUDA is reached through the driver API (libcuda.so.1, loaded with dlopen),
 * so the program builds and runs on any Linux machine. Without CUDA it
 * checks the protocol half against the producer and times the message;
 * CI runs it so on lavapipe. With --require-cuda, a missing CUDA driver is
 * a failure.
 *
 *   cargo build --release -p hurray-rs-clib -p hurray-rs-gpu --example share_peer
 *   cc -std=c11 -O2 -Wall -Wextra -Werror -Icore/ffi/include core/ffi/examples/cuda_share.c \
 *      target/release/libhurray_c.a -lpthread -ldl -lm -o target/cuda_share
 *   target/cuda_share target/release/examples/share_peer [--bench] [--require-cuda]
 *
 * With -DHURRAY_CHECK_CUDA_H and CUDA's include directory, the structs
 * below are checked against cuda.h at compile time.
 *
 * Prints one line per check and "N passed, M failed"; exits non-zero on a
 * failure.
 */
#define _GNU_SOURCE /* SCM_RIGHTS and the CMSG macros, clock_gettime, dlopen */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hurray.h"

/* The peer writes data[i] = i ^ SEED. */
#define SEED 0x2A5A5A5Au

/* ---- the CUDA driver API, as much of it as this program calls ---------- */
typedef int cu_result;
typedef int cu_device;
typedef void *cu_context;
typedef void *cu_external_memory;
typedef unsigned long long cu_deviceptr;
typedef struct {
    char bytes[16];
} cu_uuid;

/* CUDA_EXTERNAL_MEMORY_HANDLE_DESC */
typedef struct {
    int type; /* CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD = 1 */
    union {
        int fd;
        struct {
            void *handle;
            const void *name;
        } win32;
        const void *nv_sci_buf_object;
    } handle;
    unsigned long long size;
    unsigned int flags; /* CUDA_EXTERNAL_MEMORY_DEDICATED = 1 */
    unsigned int reserved[16];
} cu_external_memory_handle_desc;

/* CUDA_EXTERNAL_MEMORY_BUFFER_DESC */
typedef struct {
    unsigned long long offset;
    unsigned long long size;
    unsigned int flags;
    unsigned int reserved[16];
} cu_external_memory_buffer_desc;

#ifdef HURRAY_CHECK_CUDA_H
#include <cuda.h>
#define SAME(a, b, f) _Static_assert(offsetof(a, f) == offsetof(b, f), #f)
_Static_assert(sizeof(cu_external_memory_handle_desc) == sizeof(CUDA_EXTERNAL_MEMORY_HANDLE_DESC),
               "handle desc");
SAME(cu_external_memory_handle_desc, CUDA_EXTERNAL_MEMORY_HANDLE_DESC, handle);
SAME(cu_external_memory_handle_desc, CUDA_EXTERNAL_MEMORY_HANDLE_DESC, size);
SAME(cu_external_memory_handle_desc, CUDA_EXTERNAL_MEMORY_HANDLE_DESC, flags);
_Static_assert(sizeof(cu_external_memory_buffer_desc) == sizeof(CUDA_EXTERNAL_MEMORY_BUFFER_DESC),
               "buffer desc");
SAME(cu_external_memory_buffer_desc, CUDA_EXTERNAL_MEMORY_BUFFER_DESC, size);
SAME(cu_external_memory_buffer_desc, CUDA_EXTERNAL_MEMORY_BUFFER_DESC, flags);
_Static_assert(CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD == 1, "opaque fd");
_Static_assert(CUDA_EXTERNAL_MEMORY_DEDICATED == 1, "dedicated");
_Static_assert(sizeof(CUdeviceptr) == sizeof(cu_deviceptr), "deviceptr");
#endif

static struct {
    cu_result (*init)(unsigned int);
    cu_result (*device_get)(cu_device *, int);
    cu_result (*device_get_uuid)(cu_uuid *, cu_device);
    cu_result (*primary_ctx_retain)(cu_context *, cu_device);
    cu_result (*ctx_set_current)(cu_context);
    cu_result (*import_external_memory)(cu_external_memory *,
                                        const cu_external_memory_handle_desc *);
    cu_result (*external_memory_get_mapped_buffer)(cu_deviceptr *, cu_external_memory,
                                                   const cu_external_memory_buffer_desc *);
    cu_result (*destroy_external_memory)(cu_external_memory);
    cu_result (*mem_free)(cu_deviceptr);
    cu_result (*memcpy_dtoh)(void *, cu_deviceptr, size_t);
    cu_device device;
} cu;

/* Loads the driver and makes device 0's primary context current; 0 on
 * success, else why not in `why`. */
static int cuda_open(const char **why) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        *why = "libcuda.so.1 not found";
        return -1;
    }
    /* dlsym's void * to a function pointer goes through memcpy: ISO C has no
     * conversion between the two. */
#define LOAD(field, name)                                        \
    do {                                                         \
        void *sym = dlsym(lib, name);                            \
        if (!sym) {                                              \
            *why = "libcuda.so.1 lacks " name;                   \
            return -1;                                           \
        }                                                        \
        memcpy(&cu.field, &sym, sizeof sym);                     \
    } while (0)
    LOAD(init, "cuInit");
    LOAD(device_get, "cuDeviceGet");
    LOAD(device_get_uuid, "cuDeviceGetUuid");
    LOAD(primary_ctx_retain, "cuDevicePrimaryCtxRetain");
    LOAD(ctx_set_current, "cuCtxSetCurrent");
    LOAD(import_external_memory, "cuImportExternalMemory");
    LOAD(external_memory_get_mapped_buffer, "cuExternalMemoryGetMappedBuffer");
    LOAD(destroy_external_memory, "cuDestroyExternalMemory");
    LOAD(mem_free, "cuMemFree_v2");
    LOAD(memcpy_dtoh, "cuMemcpyDtoH_v2");
#undef LOAD
    cu_context ctx;
    if (cu.init(0) != 0 || cu.device_get(&cu.device, 0) != 0) {
        *why = "cuInit or cuDeviceGet failed (no CUDA device)";
        return -1;
    }
    if (cu.primary_ctx_retain(&ctx, cu.device) != 0 || cu.ctx_set_current(ctx) != 0) {
        *why = "no primary context";
        return -1;
    }
    return 0;
}

/* ---- checks and timing ----------------------------------------------------- */
static int passed, failed;

static int check(const char *name, int ok, const char *detail) {
    printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", name, detail[0] ? " " : "", detail);
    fflush(stdout);
    if (ok)
        passed++;
    else
        failed++;
    return ok;
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The median of `n` values (sorts them). */
static uint64_t median(uint64_t *v, size_t n) {
    qsort(v, n, sizeof *v, cmp_u64);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what) {
    fprintf(stderr, "cuda_share: %s: %s\n", what, errno ? strerror(errno) : "protocol error");
    exit(2);
}

/* ---- the producer ------------------------------------------------------------ */
static int sock = -1;
static pid_t peer_pid;

static void read_exact(int fd, void *buf, size_t n) {
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r <= 0) die("the peer closed the socket");
        got += (size_t)r;
    }
}

/* Sends command `tag` with `arg`; reads the reply `reply` (0: none) and
 * returns its value (the replies 'r', 't' carry a u64). */
static uint64_t command(char tag, uint64_t arg, char reply) {
    unsigned char out[9] = {(unsigned char)tag};
    for (int i = 0; i < 8; i++) out[1 + i] = (unsigned char)(arg >> (8 * i));
    if (write(sock, out, sizeof out) != (ssize_t)sizeof out) die("write to the peer");
    if (!reply) return 0;
    unsigned char in[9];
    size_t n = (reply == 't' || reply == 'r') ? 9 : 1;
    read_exact(sock, in, n);
    if (in[0] != (unsigned char)reply) die("unexpected reply");
    uint64_t v = 0;
    for (size_t i = 1; i < n; i++) v |= (uint64_t)in[i] << (8 * (i - 1));
    return v;
}

static void spawn_peer(const char *exe) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) die("socketpair");
    peer_pid = fork();
    if (peer_pid < 0) die("fork");
    if (peer_pid == 0) {
        if (dup2(sv[1], 0) < 0) _exit(127); /* dup2 clears CLOEXEC on fd 0 */
        execl(exe, exe, (char *)NULL);
        _exit(127);
    }
    close(sv[1]);
    sock = sv[0];
}

/* ---- one message, validated before its fd is used -------------------------------- */
#define HEADER_LEN 56
#define MAX_DESCRIPTOR_LEN 4096

struct message {
    int fd;
    uint64_t allocation_size, byte_size;
    int dedicated;
    unsigned char device_uuid[16];
    uint8_t bytes[HEADER_LEN + MAX_DESCRIPTOR_LEN];
    hurray_tensor_view view;
};

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

/* Reads exactly `n` more bytes into `buf`, collecting the fds that come
 * with them into `fds` (at most 2; more, or a truncated control message,
 * is an error). Returns 0, or -1 with a reason. */
static int recv_part(uint8_t *buf, size_t n, int *fds, int *nfds, const char **why) {
    for (size_t got = 0; got < n;) {
        union {
            struct cmsghdr align;
            char space[CMSG_SPACE(4 * sizeof(int))];
        } control;
        struct iovec iov = {buf + got, n - got};
        struct msghdr msg = {0};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.space;
        msg.msg_controllen = sizeof control.space;
        ssize_t r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); r >= 0 && c; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < k; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (*nfds < 2)
                    fds[(*nfds)++] = fd;
                else {
                    close(fd);
                    *why = "more than 2 fds came";
                    return -1;
                }
            }
        }
        if (r < 0) {
            *why = "recvmsg failed";
            return -1;
        }
        if (msg.msg_flags & MSG_CTRUNC) {
            *why = "fds were dropped (MSG_CTRUNC)";
            return -1;
        }
        if (r == 0) {
            *why = "truncated message";
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

/* Reads one ProducerSynced message and validates it; returns 0, or -1 with
 * `why` (every fd that came is closed). */
static int recv_message(struct message *m, const char **why) {
    int fds[2], nfds = 0;
    m->fd = -1;
    if (recv_part(m->bytes, HEADER_LEN, fds, &nfds, why)) goto fail;
    const uint8_t *h = m->bytes;
    uint32_t dlen = le32(h + 8);
    if (memcmp(h, "HRSB", 4) || h[4] != 1 || h[5] != 1 || (h[6] & ~1u) || h[7] != 0 ||
        dlen > MAX_DESCRIPTOR_LEN || le64(h + 16) == 0) {
        *why = "bad header (or a semaphore this consumer does not take)";
        goto fail;
    }
    if (recv_part(m->bytes + HEADER_LEN, dlen, fds, &nfds, why)) goto fail;
    hurray_error err;
    if (hurray_tensor_parse(m->bytes + HEADER_LEN, dlen, &m->view, &err) != HURRAY_OK) {
        *why = hurray_status_message(err.status);
        goto fail;
    }
    hurray_buffer_handle b;
    if (m->view.buffer_count != 1 || hurray_tensor_buffer(&m->view, 0, &b) != HURRAY_OK) {
        *why = "not exactly one buffer";
        goto fail;
    }
    m->allocation_size = le64(h + 16);
    if (b.device_tag != HURRAY_DEVICE_VULKAN || b.sync_mode != HURRAY_SYNC_PRODUCER_SYNCED ||
        b.byte_size == 0 || (b.byte_size + 3) / 4 * 4 > m->allocation_size) {
        *why = "the buffer is not a non-empty ProducerSynced Vulkan buffer that fits";
        goto fail;
    }
    if (nfds != 1) {
        *why = "not exactly one fd";
        goto fail;
    }
    struct stat st;
    if (fstat(fds[0], &st) != 0 || (S_ISREG(st.st_mode) && (uint64_t)st.st_size < m->allocation_size)) {
        *why = "the fd is smaller than the allocation";
        goto fail;
    }
    m->byte_size = b.byte_size;
    m->dedicated = h[6] & 1;
    memcpy(m->device_uuid, h + 24, 16);
    m->fd = fds[0];
    return 0;
fail:
    for (int i = 0; i < nfds; i++) close(fds[i]);
    return -1;
}

/* ---- CUDA: import, map, first read ---------------------------------------------- */
struct imported {
    cu_external_memory ext;
    cu_deviceptr ptr;
};

/* Imports the message's fd (CUDA owns it once the import succeeds) and maps
 * the buffer; returns 0 or the failing call's name in `why`. */
static int import(struct message *m, struct imported *out, uint64_t *import_ns, const char **why) {
    cu_external_memory_handle_desc d;
    memset(&d, 0, sizeof d);
    d.type = 1;
    d.handle.fd = m->fd;
    d.size = m->allocation_size;
    d.flags = m->dedicated ? 1 : 0;
    uint64_t t = now_ns();
    if (cu.import_external_memory(&out->ext, &d) != 0) {
        close(m->fd);
        *why = "cuImportExternalMemory";
        return -1;
    }
    *import_ns = now_ns() - t;
    m->fd = -1;
    cu_external_memory_buffer_desc b;
    memset(&b, 0, sizeof b);
    b.size = m->byte_size;
    if (cu.external_memory_get_mapped_buffer(&out->ptr, out->ext, &b) != 0) {
        cu.destroy_external_memory(out->ext);
        *why = "cuExternalMemoryGetMappedBuffer";
        return -1;
    }
    return 0;
}

static void release(struct imported *imp) {
    cu.mem_free(imp->ptr);
    cu.destroy_external_memory(imp->ext);
}

/* ---- the runs -------------------------------------------------------------------- */
static void protocol_round(uint64_t size, int have_cuda) {
    char detail[160];
    command('A', size, 'a');
    command('S', 0, 0);
    struct message m;
    const char *why = "";
    if (!check("message: header, descriptor and one fd validated by hurray_tensor_parse",
               recv_message(&m, &why) == 0, why)) {
        command('F', 0, 'f');
        return;
    }
    uint64_t dim = 0;
    hurray_tensor_dim(&m.view, 0, &dim);
    snprintf(detail, sizeof detail, "type %u rank %u dim %llu", m.view.element_type, m.view.rank,
             (unsigned long long)dim);
    check("message: int32 [size / 4]",
          m.view.element_type == HURRAY_TYPE_INT32 && m.view.rank == 1 && dim == size / 4, detail);
    if (!have_cuda) {
        close(m.fd);
        command('F', 0, 'f');
        return;
    }
    cu_uuid uuid;
    check("device UUID: the message's is CUDA device 0's",
          cu.device_get_uuid(&uuid, cu.device) == 0 && !memcmp(uuid.bytes, m.device_uuid, 16), "");
    struct imported imp;
    if (!check("CUDA: imported and mapped", import(&m, &imp, &(uint64_t){0}, &why) == 0, why)) {
        command('F', 0, 'f');
        return;
    }
    uint32_t words[2] = {0, 0};
    uint64_t last = size / 4 - 1;
    cu_result r1 = cu.memcpy_dtoh(&words[0], imp.ptr, 4);
    cu_result r2 = cu.memcpy_dtoh(&words[1], imp.ptr + last * 4, 4);
    snprintf(detail, sizeof detail, "[0]=%#x [last]=%#x", words[0], words[1]);
    check("CUDA reads the Vulkan kernel's values at the mapped address",
          r1 == 0 && r2 == 0 && words[0] == SEED && words[1] == ((uint32_t)last ^ SEED), detail);
    release(&imp);
    command('F', 0, 'f');
}

/* Times `reps` shares of a `size`-byte buffer; returns the median in ns. */
static uint64_t bench(uint64_t size, int reps, int have_cuda) {
    enum { MAX_REPS = 32 };
    uint64_t total[MAX_REPS], msg[MAX_REPS], producer[MAX_REPS], imp_ns[MAX_REPS], map[MAX_REPS],
        first[MAX_REPS];
    if (reps > MAX_REPS) reps = MAX_REPS;
    command('A', size, 'a');
    for (int i = 0; i < reps; i++) {
        struct message m;
        const char *why = "";
        uint64_t t0 = now_ns();
        command('S', 0, 0);
        if (recv_message(&m, &why) != 0) die(why);
        uint64_t t1 = now_ns();
        msg[i] = t1 - t0;
        imp_ns[i] = map[i] = first[i] = 0;
        if (have_cuda) {
            struct imported imp;
            if (import(&m, &imp, &imp_ns[i], &why) != 0) die(why);
            uint64_t t2 = now_ns();
            uint32_t word = 0;
            if (cu.memcpy_dtoh(&word, imp.ptr, 4) != 0 || word != SEED) die("first read");
            uint64_t t3 = now_ns();
            map[i] = t2 - t1 - imp_ns[i];
            first[i] = t3 - t2;
            total[i] = t3 - t0;
            release(&imp);
        } else {
            close(m.fd);
            total[i] = msg[i];
        }
        producer[i] = command('T', 0, 't');
    }
    command('F', 0, 'f');
    uint64_t s = median(total, (size_t)reps), lo = total[0];
    printf("%6llu MiB  share %.3f ms median (min %.3f) | message %.0f us (producer's export + send "
           "%.0f) | cuImportExternalMemory %.0f | mapped buffer %.0f | first read %.0f\n",
           (unsigned long long)(size >> 20), (double)s / 1e6, (double)lo / 1e6,
           (double)median(msg, (size_t)reps) / 1e3, (double)median(producer, (size_t)reps) / 1e3,
           (double)median(imp_ns, (size_t)reps) / 1e3, (double)median(map, (size_t)reps) / 1e3,
           (double)median(first, (size_t)reps) / 1e3);
    fflush(stdout);
    return s;
}

int main(int argc, char **argv) {
    int want_bench = 0, require_cuda = 0, bad_args = 0;
    const char *exe = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bench"))
            want_bench = 1;
        else if (!strcmp(argv[i], "--require-cuda"))
            require_cuda = 1;
        else if (argv[i][0] != '-' && !exe)
            exe = argv[i];
        else
            bad_args = 1;
    }
    if (bad_args || !exe) {
        fprintf(stderr, "usage: %s SHARE_PEER [--bench] [--require-cuda]\n", argv[0]);
        return 2;
    }
    const char *why = "";
    int have_cuda = cuda_open(&why) == 0;
    printf("cuda: %s\n", have_cuda ? "driver API, device 0" : why);
    if (require_cuda) check("CUDA driver present (--require-cuda)", have_cuda, why);
    spawn_peer(exe);
    protocol_round(1 << 20, have_cuda);
    if (want_bench) {
        static const uint64_t sizes[] = {1ull << 20, 16ull << 20, 256ull << 20, 1024ull << 20};
        uint64_t s256 = 0;
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            if (!have_cuda && sizes[i] > (16u << 20)) {
                /* A software adapter (lavapipe) binds at most 128 MiB. */
                printf("(no CUDA: the message alone, up to 16 MiB)\n");
                break;
            }
            uint64_t s = bench(sizes[i], 10, have_cuda);
            if (sizes[i] == 256ull << 20) s256 = s;
        }
        if (have_cuda) {
            char detail[64];
            snprintf(detail, sizeof detail, "%.3f ms", (double)s256 / 1e6);
            check("bench: sharing 256 MiB with CUDA under 1 ms (this consumer)", s256 < 1000000,
                  detail);
        }
    }
    command('Q', 0, 0);
    close(sock);
    int status = 0;
    waitpid(peer_pid, &status, 0);
    check("the peer exited cleanly", WIFEXITED(status) && WEXITSTATUS(status) == 0, "");
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
