//go:build linux && arm64

package seccomp

import "golang.org/x/sys/unix"

// nativeArch is the AUDIT_ARCH_* value of the running architecture.
const nativeArch = unix.AUDIT_ARCH_AARCH64

// x32SyscallBit is unused on arm64 (there is no x32 ABI).
const x32SyscallBit = 0

// archSupported reports whether this package can build a filter here.
const archSupported = true

// hasX32 reports whether the filter must reject x32 syscall numbers.
const hasX32 = false

// archDenied lists syscalls denied only on this architecture.
var archDenied = []sysEntry{}

// archStrict lists syscalls denied in strict mode only on this architecture.
var archStrict = []sysEntry{}
