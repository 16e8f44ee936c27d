package globscan

import "time"

// starvedFactor bounds how far a starved machine moves a scan's deadline:
// to starvedFactor times Limits.Deadline after its start (20 s by default).
const starvedFactor = 4

// starvedStep is how much later the deadline moves each time the machine
// is found short of CPU when it passes.
const starvedStep = time.Second

// pastDeadline says that the scan's time is up.
func (s *scan) pastDeadline() bool {
	return time.Now().UnixNano() > s.until.Load()
}

// extend is called when the deadline passes with the walk unfinished: it
// moves the deadline starvedStep later, and says so, when the machine is
// short of CPU, I/O or memory (cpuStarved) and the scan has run less than starvedFactor
// times Limits.Deadline. A walk that is slow because hundreds of processes
// share two cores finishes instead of failing a run; one stuck in a hung
// filesystem on an idle machine still fails at Limits.Deadline, and no
// walk outlives the factor.
func (s *scan) extend() bool {
	hard := s.start.Add(starvedFactor * s.lim.Deadline)
	now := time.Now()
	if !now.Before(hard) || !cpuStarved() {
		return false
	}
	s.until.Store(min(now.Add(starvedStep).UnixNano(), hard.UnixNano()))
	return true
}
