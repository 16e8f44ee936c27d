// Package seccomp builds and installs cordon's seccomp-BPF filter.
//
// The filter is a hand-written classic-BPF program for linux/amd64 and
// linux/arm64 (other platforms return an error). Denials return an errno,
// never a kill, so tools fail with a readable error:
//
//   - A syscall from a foreign architecture (AUDIT_ARCH_I386 via int 0x80 on
//     amd64, 32-bit compat on arm64) fails with EPERM, whatever its number:
//     every such call fails, so nothing can slip past the number checks.
//   - On amd64 every x32 ABI syscall (number with bit 0x40000000) fails with
//     EPERM.
//   - Always denied with EPERM: ptrace, process_vm_readv, process_vm_writev,
//     kexec_load, kexec_file_load, init_module, finit_module, delete_module,
//     bpf, perf_event_open, userfaultfd, keyctl, add_key, request_key,
//     io_uring_setup, io_uring_enter, io_uring_register, open_by_handle_at,
//     mount, umount2, pivot_root, move_mount, open_tree, fsopen, fsmount,
//     fsconfig, fspick, mount_setattr, swapon, swapoff, reboot, setns;
//     clone and unshare when their flags (args[0]) include CLONE_NEWUSER;
//     ioctl with request (low 32 bits of args[1]) TIOCSTI or TIOCLINUX;
//     personality with any persona other than PER_LINUX (0), PER_LINUX32,
//     UNAME26, UNAME26|PER_LINUX32 and the 0xffffffff query.
//   - clone3 fails with ENOSYS: its flags sit behind a pointer the filter
//     cannot read, and glibc (and Go) then fall back to clone, which is
//     checked.
//   - Strict mode additionally denies with EPERM: acct, quotactl,
//     quotactl_fd, chroot, name_to_handle_at, syslog, vhangup,
//     lookup_dcookie, nfsservctl, settimeofday, clock_settime,
//     clock_adjtime, adjtimex, sethostname, setdomainname, kcmp,
//     pidfd_getfd, process_madvise, fanotify_init; and on amd64 also
//     uselib, ioperm, iopl, modify_ldt, _sysctl, sysfs, ustat,
//     create_module, get_kernel_syms, query_module.
//   - With Options.DenyNetwork, socket(2) for AF_INET, AF_INET6 and
//     AF_PACKET fails with EPERM; with Options.DenyUnix, socket(2) for
//     AF_UNIX does (socketpair(2) stays allowed); with Options.StreamOnly,
//     socket(2) for AF_PACKET fails, and for AF_INET and AF_INET6 unless
//     its type is SOCK_STREAM (flags aside) and its protocol 0 or
//     IPPROTO_TCP, and sendto(2), sendmsg(2) and sendmmsg(2) with
//     MSG_FASTOPEN fail (TCP Fast Open connects without connect(2), so
//     Landlock's TCP connect rule would not see it); with
//     Options.DenyOtherFamilies (implied by StreamOnly), socket(2) for
//     every family but AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK
//     (AF_VSOCK, AF_SMC, Bluetooth, ...) fails.
//
// Everything else is allowed. Install sets no_new_privs and applies the
// filter to all threads of the process (SECCOMP_FILTER_FLAG_TSYNC).
//
// WatchFilter is the violation monitor's second program: it allows every
// call but sends the watched file and socket calls (Watched) to a
// listener first (SECCOMP_RET_USER_NOTIF), where the host's supervisor
// (package monitor) looks at them and lets each go on unchanged. It
// enforces nothing; InstallWatch installs it after the enforcing filter,
// whose errno wins over a notification. SuperviseFilter is the same program
// over more calls (Supervised: the metadata calls too) for the
// Landlock-only backend's supervisor, which performs or refuses each one
// (InstallSupervise). TreeFilter sends the rename calls and the calls
// that can add a name to a directory (Creating: open and openat only with
// O_CREAT in their flags' register), which the host counts (ChangesTree)
// and lets go on (InstallTree); every notify filter also sends the btrfs
// ioctls that make a subvolume or a snapshot, and the calls that change a
// file's permissions (chmod, an ACL).
package seccomp
