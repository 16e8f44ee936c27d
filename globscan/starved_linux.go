package globscan

import (
	"bytes"
	"os"
	"strconv"
)

// starvedPressure is the share of the last 10 s (in percent) during which
// some runnable task waited for a CPU, at or above which the machine is
// short of CPU. From idle, 5 s of full contention reads about 39.
const starvedPressure = 10

// pressureFile is Linux's pressure stall information for CPUs (PSI, 4.20
// and later; a variable for the tests).
var pressureFile = "/proc/pressure/cpu"

// cpuStarved says that tasks on this machine have been waiting for a CPU:
// the "some avg10" of pressureFile is at least starvedPressure. Without
// PSI it says no (the deadline is then wall-clock time, as elsewhere).
func cpuStarved() bool {
	b, err := os.ReadFile(pressureFile)
	if err != nil {
		return false
	}
	v, ok := someAvg10(b)
	return ok && v >= starvedPressure
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
