// SPDX-License-Identifier: Apache-2.0
/*
 * The collector's seccomp filter. After start-up its loop reads procfs,
 * sysfs and cgroup files, BPF maps through descriptors it holds, writes the
 * store (LMDB: pwrite, msync, fdatasync, and a reopen after a full disk),
 * logs to stderr, sleeps, and, with the kubelet source, runs one thread of
 * libcurl (sockets, poll, a resolver). That is the whole list below; what
 * is not on it (ptrace, mount, setuid, perf_event_open, process_vm_*,
 * keyctl, io_uring, userfaultfd, unshare, execve, ...) fails with ENOSYS.
 * kill only with signal 0 (does a PID exist). ioctl and prctl are allowed
 * only for the requests glibc and libcurl make,
 * and with a GPU meter those of the NVIDIA driver (NVML's); with the IPMI
 * platform meter, bind (libfreeipmi binds its UDP socket) and the IPMI
 * driver's ioctls.
 */
#include <errno.h>
#include <seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <termios.h>

#include "syscall_filter.h"

static const char *const allowed[] = {
	/* files */
	"read",
	"write",
	"readv",
	"writev",
	"pread64",
	"pwrite64",
	"preadv",
	"pwritev",
	"open",
	"openat",
	"close",
	"close_range",
	"fstat",
	"stat",
	"lstat",
	"newfstatat",
	"statx",
	"lseek",
	"getdents",
	"getdents64",
	"readlink",
	"readlinkat",
	"access",
	"faccessat",
	"faccessat2",
	"fcntl",
	"dup",
	"dup2",
	"dup3",
	"fsync",
	"fdatasync",
	"msync",
	"ftruncate",
	"fallocate",
	"flock",
	"rename",
	"renameat",
	"renameat2",
	"unlink",
	"unlinkat",
	"mkdir",
	"mkdirat",
	"statfs",
	"fstatfs",
	"getcwd",
	"umask",
	"chmod",
	"fchmod",
	"fchmodat",
	"chown",
	"fchown",
	"fchownat",
	"lchown",
	/* memory */
	"mmap",
	"munmap",
	"mremap",
	"mprotect",
	"madvise",
	"brk",
	/* threads, signals, identity of self */
	"clone",
	"clone3",
	"exit",
	"exit_group",
	"futex",
	"set_robust_list",
	"rseq",
	"set_tid_address",
	"getpid",
	"gettid",
	"getppid",
	"getuid",
	"geteuid",
	"getgid",
	"getegid",
	"getgroups",
	"getresuid",
	"getresgid",
	"sched_yield",
	"sched_getaffinity",
	"prlimit64",
	"getrlimit",
	"getrusage",
	"times",
	"uname",
	"sysinfo",
	"getrandom",
	"tgkill",
	"rt_sigaction",
	"rt_sigprocmask",
	"rt_sigreturn",
	"sigaltstack",
	"restart_syscall",
	/* time */
	"clock_gettime",
	"clock_getres",
	"gettimeofday",
	"time",
	"nanosleep",
	"clock_nanosleep",
	/* waiting */
	"poll",
	"ppoll",
	"select",
	"pselect6",
	"epoll_create1",
	"epoll_ctl",
	"epoll_wait",
	"epoll_pwait",
	"eventfd2",
	"pipe",
	"pipe2",
	/* the kubelet client (libcurl) */
	"socket",
	"socketpair",
	"connect",
	"sendto",
	"recvfrom",
	"sendmsg",
	"recvmsg",
	"sendmmsg",
	"getsockopt",
	"setsockopt",
	"getsockname",
	"getpeername",
	"shutdown",
	/* BPF maps through the descriptors opened at start */
	"bpf",
#if defined(__SANITIZE_ADDRESS__)
	/* sanitizer builds only: LeakSanitizer's tracer at exit */
	"ptrace",
	"process_vm_readv",
	"wait4",
	"waitid",
	"prctl",
	"personality",
	"mincore",
#endif
};

/* ioctl requests allowed: is it a terminal (isatty), bytes waiting, non-blocking */
static const unsigned long ioctls[] = { TCGETS, TIOCGWINSZ, FIONREAD, FIONBIO };

static int add_rule(scmp_filter_ctx ctx, int nr, unsigned count, const struct scmp_arg_cmp *arg)
{
	return count ? seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, count, arg)
		     : seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
}

/*
 * NVML talks to the driver through ioctls on /dev/nvidiactl and
 * /dev/nvidiaN, all of the driver's type 'F' (NV_IOCTL_MAGIC): with a GPU
 * meter, those, and only those, are added.
 */
#define NVIDIA_IOCTL_TYPE ((unsigned long)'F' << _IOC_TYPESHIFT)
/* the Linux IPMI driver's ioctls (IPMI_IOC_MAGIC, linux/ipmi.h) */
#define IPMI_IOCTL_TYPE ((unsigned long)'i' << _IOC_TYPESHIFT)
#define IOCTL_TYPE_MASK ((unsigned long)_IOC_TYPEMASK << _IOC_TYPESHIFT)

int kepler_syscall_filter_apply(bool nvidia, bool ipmi, struct kepler_error *err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
	int r = 0, n = 0;

	if (!ctx)
		return kepler_error_set(err, -ENOMEM, "cannot make a seccomp filter: out of memory");
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]) && r == 0; i++) {
		int nr = seccomp_syscall_resolve_name(allowed[i]);

		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture */
		r = add_rule(ctx, nr, 0, NULL);
		n++;
	}
	for (size_t i = 0; i < sizeof(ioctls) / sizeof(ioctls[0]) && r == 0; i++) {
		struct scmp_arg_cmp a = { .arg = 1, .op = SCMP_CMP_EQ, .datum_a = ioctls[i], .datum_b = 0 };

		r = add_rule(ctx, SCMP_SYS(ioctl), 1, &a);
	}
	if (r == 0) {
		/* kill(pid, 0) only: whether an idle process still exists (the eBPF informer), no signal */
		struct scmp_arg_cmp a = SCMP_A1(SCMP_CMP_EQ, 0);

		r = add_rule(ctx, SCMP_SYS(kill), 1, &a);
		n += r == 0;
	}
	if (nvidia && r == 0) {
		struct scmp_arg_cmp a = SCMP_A1(SCMP_CMP_MASKED_EQ, IOCTL_TYPE_MASK, NVIDIA_IOCTL_TYPE);

		r = add_rule(ctx, SCMP_SYS(ioctl), 1, &a);
	}
	n += r == 0;
	if (ipmi && r == 0) {
		struct scmp_arg_cmp a = SCMP_A1(SCMP_CMP_MASKED_EQ, IOCTL_TYPE_MASK, IPMI_IOCTL_TYPE);

		r = add_rule(ctx, SCMP_SYS(ioctl), 1, &a);
		if (r == 0)
			r = add_rule(ctx, SCMP_SYS(bind), 0, NULL);
		n += r == 0;
	}
#if !defined(__SANITIZE_ADDRESS__)
	if (r == 0) {
		/* glibc names threads (pthread_setname_np goes through /proc), curl does not: read only */
		struct scmp_arg_cmp a = { .arg = 0, .op = SCMP_CMP_EQ, .datum_a = PR_GET_NAME, .datum_b = 0 };

		r = add_rule(ctx, SCMP_SYS(prctl), 1, &a);
		n++;
	}
#endif
	if (r == 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	if (r < 0)
		return kepler_error_set(err, r, "cannot load the seccomp filter: %s", strerror(-r));
	return n;
}
