package limits

import "testing"

// TestJobSpecOf checks the Job Object settings of a Windows run for each
// limit; the Windows calls themselves are compiled, not run, here.
func TestJobSpecOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    Limits
		want jobSpec
	}{
		{"none", Limits{}, jobSpec{Flags: jobLimitKillOnClose}},
		{"processes", Limits{MaxProcesses: 64}, jobSpec{Flags: jobLimitKillOnClose | jobLimitActiveProcess, ActiveProcesses: 64}},
		{"memory", Limits{MaxMemoryMB: 2048}, jobSpec{Flags: jobLimitKillOnClose | jobLimitJobMemory, JobMemory: 2048 << 20}},
		{"cpu", Limits{MaxCPUSeconds: 3}, jobSpec{Flags: jobLimitKillOnClose | jobLimitJobTime, UserTime100ns: 30_000_000}},
		{"all", Limits{MaxProcesses: 1, MaxMemoryMB: 1, MaxCPUSeconds: 1}, jobSpec{
			Flags:           jobLimitKillOnClose | jobLimitActiveProcess | jobLimitJobMemory | jobLimitJobTime,
			ActiveProcesses: 1, JobMemory: 1 << 20, UserTime100ns: 10_000_000}},
	} {
		if got := jobSpecOf(tc.l); got != tc.want {
			t.Errorf("%s: jobSpecOf(%+v) = %+v, want %+v", tc.name, tc.l, got, tc.want)
		}
	}
}
