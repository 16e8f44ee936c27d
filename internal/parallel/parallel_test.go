package parallel

import (
	"sync"
	"testing"
	"time"
)

// TestEach: every iteration runs exactly once, for counts below and from
// From on; below From they run in order in the caller's goroutine, from
// From on two run at the same time (each of the first two waits, bounded,
// for the other to have started).
func TestEach(t *testing.T) {
	for _, n := range []int{0, 1, From - 1, From, 3*From + 1} {
		var mu sync.Mutex
		seen := make([]int, n)
		var order []int
		Each(n, func(i int) {
			mu.Lock()
			defer mu.Unlock()
			seen[i]++
			order = append(order, i)
		})
		for i, c := range seen {
			if c != 1 {
				t.Errorf("n %d: iteration %d ran %d times", n, i, c)
			}
		}
		if n < From {
			for i, got := range order {
				if got != i {
					t.Errorf("n %d: iteration %d ran as the %dth, want in order", n, got, i)
					break
				}
			}
		}
	}
	// From From on, iterations 0 and 1 run at the same time.
	started := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	overlapped := [2]bool{}
	Each(From, func(i int) {
		if i > 1 {
			return
		}
		close(started[i])
		select {
		case <-started[1-i]:
			overlapped[i] = true
		case <-time.After(5 * time.Second):
		}
	})
	if !overlapped[0] || !overlapped[1] {
		t.Errorf("iterations 0 and 1 did not run at the same time: %v", overlapped)
	}
}
