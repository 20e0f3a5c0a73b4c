/* fdpass_guard.bpf.c - BPF LSM program (BPF_LSM_CGROUP, attached to the
 * sandbox's cgroup by fdpass_guard.c): a process of the sandbox may not
 * receive an AF_INET/AF_INET6 socket through SCM_RIGHTS (nor through any
 * other path that installs a file with receive_fd: a seccomp listener's
 * ADDFD, pidfd_getfd). Caller identity judges every holder of a proxied
 * socket; without this, an agent could park its copy in flight while an
 * allowed binary holds the other one and take it back after the lookup.
 * It judges the file being installed, never an fd number, so no thread can
 * swap what it checks. It must never refuse anything else. */
#include "bpf_core.h"

#include <bpf/bpf_tracing.h>

/* LSM programs must declare a GPL-compatible licence to load. */
char LICENSE[] SEC("license") = "GPL";

/* Refusals so far, read by the supervisor's self-test and tests. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} refused SEC(".maps");

/* BPF_LSM_CGROUP: 1 lets the call go on, 0 makes it fail with EPERM. */
SEC("lsm_cgroup/file_receive")
int BPF_PROG(fdpass_refuse_inet, struct file *file)
{
	if (!core_file_is_inet_socket(file))
		return 1;
	__u32 key = 0;
	__u64 *n = bpf_map_lookup_elem(&refused, &key);
	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}
