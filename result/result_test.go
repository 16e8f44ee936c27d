package result

import "testing"

func TestLimitHitLine(t *testing.T) {
	for _, tc := range []struct {
		h    LimitHit
		want string
	}{
		{LimitHit{Limit: LimitCPU, Value: 1, Killed: true, Certain: true}, "killed: CPU time limit of 1 s reached (--max-cpu)"},
		{LimitHit{Limit: LimitFileSize, Value: 64, Killed: true, Certain: true}, "killed: file size limit of 64 MB reached (--max-file-size)"},
		{LimitHit{Limit: LimitMemory, Value: 512, Killed: true, Certain: true}, "killed: memory limit of 512 MB reached (--max-memory)"},
		{LimitHit{Limit: LimitCPU, Value: 2, Killed: true, Evidence: "E"}, "probably killed: CPU time limit of 2 s reached (--max-cpu): E"},
		{LimitHit{Limit: LimitProcesses, Value: 10, Certain: true, Evidence: "E"}, "process limit of 10 reached (--max-procs): E"},
	} {
		if got := tc.h.Line(); got != tc.want {
			t.Errorf("%+v.Line() = %q, want %q", tc.h, got, tc.want)
		}
	}
}
