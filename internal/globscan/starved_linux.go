package globscan

import (
	"bytes"
	"os"
	"strconv"
)

// starvedPressure is the share of the last 10 s (in percent) during which
// some task waited for a CPU, for I/O or for memory, at or above which the
// machine is starved. From idle, 5 s of full contention reads about 39.
const starvedPressure = 10

// pressureFiles are Linux's pressure stall information (PSI, 4.20 and
// later) for CPUs, I/O and memory (a variable for the tests). A walk is as
// slow when hundreds of processes wait for the disk or for memory as when
// they wait for a CPU.
var pressureFiles = []string{"/proc/pressure/cpu", "/proc/pressure/io", "/proc/pressure/memory"}

// cpuStarved says that tasks on this machine have been waiting for a CPU,
// for I/O or for memory: the "some avg10" of one of pressureFiles is at
// least starvedPressure. Without PSI it says no (the deadline is then
// wall-clock time, as elsewhere).
func cpuStarved() bool {
	for _, f := range pressureFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if v, ok := someAvg10(b); ok && v >= starvedPressure {
			return true
		}
	}
	return false
}

// someAvg10 reads "avg10" from the "some" line of a PSI file.
func someAvg10(b []byte) (float64, bool) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("some "))
		if !ok {
			continue
		}
		for field := range bytes.FieldsSeq(rest) {
			if v, ok := bytes.CutPrefix(field, []byte("avg10=")); ok {
				f, err := strconv.ParseFloat(string(v), 64)
				return f, err == nil
			}
		}
	}
	return 0, false
}
