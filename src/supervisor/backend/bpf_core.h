/* bpf_core.h - the few kernel types the BPF programs of this folder read,
 * written by hand instead of a generated vmlinux.h: each names only the
 * fields read, and preserve_access_index makes libbpf relocate every access
 * against the running kernel's BTF (/sys/kernel/btf/vmlinux) at load, so
 * the offsets here never matter. Include it only from *.bpf.c files. */
#ifndef OS_SUPERVISOR_BPF_CORE_H
#define OS_SUPERVISOR_BPF_CORE_H

#include <linux/bpf.h> /* map types, __u32 and the like */

#define CORE_TYPE __attribute__((preserve_access_index))

struct super_block {
	unsigned long s_magic;
} CORE_TYPE;

struct inode {
	unsigned short i_mode; /* umode_t */
	struct super_block *i_sb;
	unsigned long i_ino;
} CORE_TYPE;

struct file {
	struct inode *f_inode;
	void *private_data; /* struct socket * for sockfs files */
} CORE_TYPE;

struct sock_common {
	unsigned short skc_family;
} CORE_TYPE;

struct sock {
	struct sock_common __sk_common;
} CORE_TYPE;

struct socket {
	struct sock *sk;
} CORE_TYPE;

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#define SOCKFS_MAGIC 0x534F434B
#define CORE_MODE_TYPE 0170000
#define CORE_MODE_SOCK 0140000
#define CORE_AF_INET 2
#define CORE_AF_INET6 10

/* Is file an AF_INET/AF_INET6 socket? An O_PATH file of a socket inode on
 * disk is no socket of sockfs: its private_data is not a struct socket. */
static __always_inline int core_file_is_inet_socket(struct file *file)
{
	struct inode *inode = BPF_CORE_READ(file, f_inode);
	if (!inode || (BPF_CORE_READ(inode, i_mode) & CORE_MODE_TYPE) != CORE_MODE_SOCK ||
	    BPF_CORE_READ(inode, i_sb, s_magic) != SOCKFS_MAGIC)
		return 0;
	struct socket *sock = (struct socket *)BPF_CORE_READ(file, private_data);
	unsigned short family = BPF_CORE_READ(sock, sk, __sk_common.skc_family);
	return family == CORE_AF_INET || family == CORE_AF_INET6;
}

#endif
