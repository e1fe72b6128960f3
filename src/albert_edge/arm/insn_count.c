/*
 * albert-edge: TCG plugin counting guest instructions between marker syscalls.
 *
 * Why a plugin: an emulated inference takes 0.2-2 s of wall time that says nothing about a
 * phone, but the number of guest instructions executed is deterministic and follows the
 * kernel family (NEON vs dot-product vs i8mm), so it is a usable cost proxy.
 *
 * Why markers: counting the whole process would drown one inference in Python start-up.
 * The guest (albert_edge.arm.guest) issues an otherwise unused syscall number MARKER_NR with
 * a1 == MARKER_MAGIC and a2 == a tag before and after each invoke; at each marker this plugin
 * appends "tag cumulative_count" to the file named by the plugin argument out=FILE, and the
 * host differences consecutive markers. qemu returns ENOSYS for the syscall, nothing else
 * happens.
 *
 * Counting is per translated block (n_insns added inline when the block starts), which is
 * exact for blocks that run to their end and cheap (no callback per instruction). The
 * counter is one global: the guest runs its interpreters single-threaded.
 *
 * Debian's qemu-user ships no qemu-plugin.h, so the few declarations used are written out
 * below from QEMU 7.2's plugin API (QEMU_PLUGIN_VERSION 1); setup checks that the qemu in
 * use loads this plugin.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define MARKER_NR 2784          /* 0xae0: no aarch64 Linux syscall has this number */
#define MARKER_MAGIC 0x414c4245 /* "ALBE" */

typedef uint64_t qemu_plugin_id_t;
typedef struct {
    const char *target_name;
    struct { int min; int cur; } version;
    bool system_emulation;
    union { struct { int smp_vcpus; int max_vcpus; } system; };
} qemu_info_t;
struct qemu_plugin_tb;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*syscall_cb_t)(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, uint64_t a1, uint64_t a2,
                             uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8);
typedef void (*udata_cb_t)(qemu_plugin_id_t id, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr, uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_syscall_cb(qemu_plugin_id_t id, syscall_cb_t cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb_t cb, void *userdata);

EXPORT int qemu_plugin_version = 1;

static uint64_t insns;
static FILE *out;

static void on_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &insns, qemu_plugin_tb_n_insns(tb));
}

static void on_syscall(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, uint64_t a1, uint64_t a2, uint64_t a3,
                       uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8)
{
    (void)id; (void)vcpu; (void)a3; (void)a4; (void)a5; (void)a6; (void)a7; (void)a8;
    if (num == MARKER_NR && a1 == MARKER_MAGIC) {
        fprintf(out, "%llu %llu\n", (unsigned long long)a2, (unsigned long long)insns);
        fflush(out);
    }
}

static void on_plugin_exit(qemu_plugin_id_t id, void *userdata)
{
    (void)id; (void)userdata;
    fprintf(out, "total %llu\n", (unsigned long long)insns);
    fclose(out);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    const char *path = NULL;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) path = argv[i] + 4;
    }
    if (path == NULL) {
        fprintf(stderr, "insn_count: plugin argument out=FILE is required\n");
        return -1;
    }
    out = fopen(path, "w");
    if (out == NULL) {
        perror(path);
        return -1;
    }
    fprintf(out, "api %d %d %s\n", info->version.min, info->version.cur, info->target_name);
    fflush(out);
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
    qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
    qemu_plugin_register_atexit_cb(id, on_plugin_exit, NULL);
    return 0;
}
