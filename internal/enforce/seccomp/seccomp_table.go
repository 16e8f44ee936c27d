//go:build linux && (amd64 || arm64)

package seccomp

import "golang.org/x/sys/unix"

// commonDenied lists the syscalls that are always denied with EPERM.
var commonDenied = []sysEntry{
	{"ptrace", unix.SYS_PTRACE},
	{"process_vm_readv", unix.SYS_PROCESS_VM_READV},
	{"process_vm_writev", unix.SYS_PROCESS_VM_WRITEV},
	{"kexec_load", unix.SYS_KEXEC_LOAD},
	{"kexec_file_load", unix.SYS_KEXEC_FILE_LOAD},
	{"init_module", unix.SYS_INIT_MODULE},
	{"finit_module", unix.SYS_FINIT_MODULE},
	{"delete_module", unix.SYS_DELETE_MODULE},
	{"bpf", unix.SYS_BPF},
	{"perf_event_open", unix.SYS_PERF_EVENT_OPEN},
	{"userfaultfd", unix.SYS_USERFAULTFD},
	{"keyctl", unix.SYS_KEYCTL},
	{"add_key", unix.SYS_ADD_KEY},
	{"request_key", unix.SYS_REQUEST_KEY},
	{"io_uring_setup", unix.SYS_IO_URING_SETUP},
	{"io_uring_enter", unix.SYS_IO_URING_ENTER},
	{"io_uring_register", unix.SYS_IO_URING_REGISTER},
	{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT},
	{"mount", unix.SYS_MOUNT},
	{"umount2", unix.SYS_UMOUNT2},
	{"pivot_root", unix.SYS_PIVOT_ROOT},
	{"move_mount", unix.SYS_MOVE_MOUNT},
	{"open_tree", unix.SYS_OPEN_TREE},
	{"fsopen", unix.SYS_FSOPEN},
	{"fsmount", unix.SYS_FSMOUNT},
	{"fsconfig", unix.SYS_FSCONFIG},
	{"fspick", unix.SYS_FSPICK},
	{"mount_setattr", unix.SYS_MOUNT_SETATTR},
	{"swapon", unix.SYS_SWAPON},
	{"swapoff", unix.SYS_SWAPOFF},
	{"reboot", unix.SYS_REBOOT},
	{"setns", unix.SYS_SETNS},
}

// commonStrict lists the syscalls additionally denied with EPERM in strict mode.
var commonStrict = []sysEntry{
	{"acct", unix.SYS_ACCT},
	{"quotactl", unix.SYS_QUOTACTL},
	{"quotactl_fd", unix.SYS_QUOTACTL_FD},
	{"chroot", unix.SYS_CHROOT},
	{"name_to_handle_at", unix.SYS_NAME_TO_HANDLE_AT},
	{"syslog", unix.SYS_SYSLOG},
	{"vhangup", unix.SYS_VHANGUP},
	{"lookup_dcookie", unix.SYS_LOOKUP_DCOOKIE},
	{"nfsservctl", unix.SYS_NFSSERVCTL},
	{"settimeofday", unix.SYS_SETTIMEOFDAY},
	{"clock_settime", unix.SYS_CLOCK_SETTIME},
	{"clock_adjtime", unix.SYS_CLOCK_ADJTIME},
	{"adjtimex", unix.SYS_ADJTIMEX},
	{"sethostname", unix.SYS_SETHOSTNAME},
	{"setdomainname", unix.SYS_SETDOMAINNAME},
	{"kcmp", unix.SYS_KCMP},
	{"pidfd_getfd", unix.SYS_PIDFD_GETFD},
	{"process_madvise", unix.SYS_PROCESS_MADVISE},
	{"fanotify_init", unix.SYS_FANOTIFY_INIT},
}

// Syscalls with an argument check or a special return value.
const (
	sysClone       = unix.SYS_CLONE
	sysClone3      = unix.SYS_CLONE3
	sysUnshare     = unix.SYS_UNSHARE
	sysIoctl       = unix.SYS_IOCTL
	sysPersonality = unix.SYS_PERSONALITY
)
