package launch

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestGrowFDTable: in a process started with only its standard
// descriptors (the table of 64 a run starts with), growFDTable grows the
// table to fdTableSize and leaves no descriptor open.
func TestGrowFDTable(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A forked process's table is as large as its parent's highest open
	// descriptor needs, and exec keeps it. So the child is forked by a
	// shell that got only the standard descriptors: those this process
	// inherited without close-on-exec (a shell's high ones) are marked
	// so first.
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	out, err := exec.Command("/bin/sh", "-c", `"$0" "$1"; exit $?`, exe, fdTableArg).Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var before, after, openBefore, openAfter int
	if _, err := fmt.Sscan(strings.TrimSpace(string(out)), &before, &after, &openBefore, &openAfter); err != nil {
		t.Fatalf("child said %q: %v", out, err)
	}
	if before >= fdTableSize {
		t.Fatalf("the child's table held %d descriptors before: nothing to grow", before)
	}
	if after < fdTableSize {
		t.Errorf("FDSize %d after growFDTable, want at least %d", after, fdTableSize)
	}
	if openAfter != openBefore {
		t.Errorf("%d descriptors open before, %d after", openBefore, openAfter)
	}
}

// fdTableArg makes the test binary fdTableChild (see TestMain).
const fdTableArg = "cordon-fdtable-child"

// fdTableChild prints the size of its descriptor table (FDSize in
// /proc/self/status), grows it with growFDTable, and prints it again with
// the number of descriptors then open. A process of its own, started
// with none but its standard ones, has the table a run starts with.
func fdTableChild() int {
	size := func() string {
		st, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return "?"
		}
		for l := range strings.SplitSeq(string(st), "\n") {
			if v, ok := strings.CutPrefix(l, "FDSize:"); ok {
				return strings.TrimSpace(v)
			}
		}
		return "?"
	}
	before := size()
	ents, _ := os.ReadDir("/proc/self/fd")
	growFDTable()
	growFDTable() // once per process
	select {
	case <-grown:
	case <-time.After(5 * time.Second):
		fmt.Println("not grown within 5 s")
		return 1
	}
	after, _ := os.ReadDir("/proc/self/fd")
	fmt.Println(before, size(), len(ents), len(after))
	return 0
}
