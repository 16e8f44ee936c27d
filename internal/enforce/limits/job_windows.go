package limits

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The flags of job.go must be Windows' own: a difference fails to compile
// (a non-zero constant index out of the array's range).
var _ = [1]struct{}{}[jobLimitJobTime-windows.JOB_OBJECT_LIMIT_JOB_TIME+
	jobLimitActiveProcess-windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS+
	jobLimitJobMemory-windows.JOB_OBJECT_LIMIT_JOB_MEMORY+
	jobLimitKillOnClose-windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE]

// Job is a Windows Job Object holding one run's process tree: its limits
// are Limits' (processes, memory, CPU time), and it is created with
// JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, so that every process in it is
// terminated when the job's last handle closes: by Close, or by Windows
// when cordon itself dies.
type Job struct {
	h      windows.Handle
	limits Limits
}

// NewJob creates an unnamed Job Object with the limits l.
func NewJob(l Limits) (*Job, error) {
	if l.MaxProcesses < 0 || l.MaxMemoryMB < 0 || l.MaxCPUSeconds < 0 {
		return nil, errors.New("limits: negative limit")
	}
	h, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("limits: creating a Job Object: %w", err)
	}
	s := jobSpecOf(l)
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = s.Flags
	info.BasicLimitInformation.ActiveProcessLimit = s.ActiveProcesses
	info.BasicLimitInformation.PerJobUserTimeLimit = s.UserTime100ns
	info.JobMemoryLimit = uintptr(s.JobMemory)
	if _, err := windows.SetInformationJobObject(h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(h)
		return nil, fmt.Errorf("limits: setting the Job Object's limits: %w", err)
	}
	return &Job{h: h, limits: l}, nil
}

// Assign puts the process pid into the job. Its children started after
// that are in the job too; start the process suspended (CREATE_SUSPENDED)
// and Resume it after Assign, so that none is started before.
func (j *Job) Assign(pid int) error {
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return fmt.Errorf("limits: opening process %d: %w", pid, err)
	}
	defer windows.CloseHandle(p)
	if err := windows.AssignProcessToJobObject(j.h, p); err != nil {
		return fmt.Errorf("limits: putting process %d into the Job Object: %w", pid, err)
	}
	return nil
}

// Resume resumes every thread of the process pid, started suspended: os/exec
// gives no thread handle, so the threads are found in a snapshot.
func Resume(pid int) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("limits: listing the threads of process %d: %w", pid, err)
	}
	defer windows.CloseHandle(snap)
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != uint32(pid) {
			continue
		}
		t, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return fmt.Errorf("limits: opening thread %d of process %d: %w", te.ThreadID, pid, err)
		}
		_, err = windows.ResumeThread(t)
		windows.CloseHandle(t)
		if err != nil {
			return fmt.Errorf("limits: resuming thread %d of process %d: %w", te.ThreadID, pid, err)
		}
		resumed++
	}
	if resumed == 0 {
		return fmt.Errorf("limits: process %d has no thread to resume", pid)
	}
	return nil
}

// Kill terminates every process in the job.
func (j *Job) Kill() error {
	if err := windows.TerminateJobObject(j.h, 1); err != nil {
		return fmt.Errorf("limits: terminating the Job Object: %w", err)
	}
	return nil
}

// Close closes the job's handle, which terminates what is left in it
// (KILL_ON_JOB_CLOSE).
func (j *Job) Close() error {
	if j.h == 0 {
		return nil
	}
	err := windows.CloseHandle(j.h)
	j.h = 0
	return err
}

// PeakMemory is the most memory the job's processes committed at once, in
// bytes (PeakJobMemoryUsed), or 0 when Windows does not say.
func (j *Job) PeakMemory() uint64 {
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	if err := windows.QueryInformationJobObject(j.h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil); err != nil {
		return 0
	}
	return uint64(info.PeakJobMemoryUsed)
}
