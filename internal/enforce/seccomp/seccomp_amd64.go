//go:build linux && amd64

package seccomp

import "golang.org/x/sys/unix"

// nativeArch is the AUDIT_ARCH_* value of the running architecture.
const nativeArch = unix.AUDIT_ARCH_X86_64

// x32SyscallBit marks x32 ABI syscall numbers on amd64 (__X32_SYSCALL_BIT).
const x32SyscallBit = 0x40000000

// archSupported reports whether this package can build a filter here.
const archSupported = true

// hasX32 reports whether the filter must reject x32 syscall numbers.
const hasX32 = true

// archDenied lists syscalls denied only on this architecture.
var archDenied = []sysEntry{}

// archStrict lists syscalls denied in strict mode only on this architecture.
var archStrict = []sysEntry{
	{"uselib", unix.SYS_USELIB},
	{"ioperm", unix.SYS_IOPERM},
	{"iopl", unix.SYS_IOPL},
	{"modify_ldt", unix.SYS_MODIFY_LDT},
	{"_sysctl", unix.SYS__SYSCTL},
	{"sysfs", unix.SYS_SYSFS},
	{"ustat", unix.SYS_USTAT},
	{"create_module", unix.SYS_CREATE_MODULE},
	{"get_kernel_syms", unix.SYS_GET_KERNEL_SYMS},
	{"query_module", unix.SYS_QUERY_MODULE},
}
