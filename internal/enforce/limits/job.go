package limits

// The Job Object limit flags cordon sets (winnt.h). They are spelt here so
// that jobSpec, the pure part of a Windows Job, is tested on every OS;
// job_windows.go checks at compile time that they equal x/sys/windows'.
const (
	jobLimitJobTime       = 0x00000004 // JOB_OBJECT_LIMIT_JOB_TIME
	jobLimitActiveProcess = 0x00000008 // JOB_OBJECT_LIMIT_ACTIVE_PROCESS
	jobLimitJobMemory     = 0x00000200 // JOB_OBJECT_LIMIT_JOB_MEMORY
	jobLimitKillOnClose   = 0x00002000 // JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
)

// jobSpec is what a Windows Job Object is set to for Limits: the fields of
// JOBOBJECT_EXTENDED_LIMIT_INFORMATION that cordon fills.
type jobSpec struct {
	// Flags is LimitFlags: always KILL_ON_JOB_CLOSE (the whole tree dies
	// when cordon closes the job, or dies), plus one flag per limit set.
	Flags uint32
	// ActiveProcesses is ActiveProcessLimit, for MaxProcesses.
	ActiveProcesses uint32
	// JobMemory is JobMemoryLimit in bytes, for MaxMemoryMB: the committed
	// memory of all the job's processes together.
	JobMemory uint64
	// UserTime100ns is PerJobUserTimeLimit in 100 ns units, for
	// MaxCPUSeconds: the user-mode CPU time of all the job's processes
	// together; Windows terminates the job when it is used up.
	UserTime100ns int64
}

// jobSpecOf returns the Job Object settings for l. Zero limits set nothing
// but KILL_ON_JOB_CLOSE; negative ones are refused by the caller.
func jobSpecOf(l Limits) jobSpec {
	s := jobSpec{Flags: jobLimitKillOnClose}
	if l.MaxProcesses > 0 {
		s.Flags |= jobLimitActiveProcess
		s.ActiveProcesses = uint32(l.MaxProcesses)
	}
	if l.MaxMemoryMB > 0 {
		s.Flags |= jobLimitJobMemory
		s.JobMemory = uint64(l.MaxMemoryMB) << 20
	}
	if l.MaxCPUSeconds > 0 {
		s.Flags |= jobLimitJobTime
		s.UserTime100ns = int64(l.MaxCPUSeconds) * 10_000_000
	}
	return s
}
