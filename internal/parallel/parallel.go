// Package parallel runs the iterations of a loop over many small, mostly
// system-call work items (one per git directory of a workspace: read a
// config, list a directory, check what a run left) in two goroutines once
// there are enough of them to pay for the second.
//
// It owns only that split. It must not decide what runs (callers pass a
// function whose iterations touch no shared state but their own slot of
// a result slice) and it never uses more than two goroutines: cordon's
// runs are short, and on the 2-core machines it is measured on a third
// only waits for a core. The standard library's sync.WaitGroup does the
// waiting; golang.org/x/sync/errgroup would add an error path that none
// of the callers has.
package parallel

import "sync"

// From is the fewest iterations Each shares between two goroutines: below
// it, starting the second costs about what it saves (measured with 200
// nested repositories, where it saves half of each loop's time).
const From = 32

// Each calls f(i) for every i below n: in order in the calling goroutine
// below From, else the even i in a second goroutine and the odd ones in
// the caller's, and returns once every call has returned. Calls of f may
// run at the same time from From on.
func Each(n int, f func(i int)) {
	if n < From {
		for i := range n {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; i < n; i += 2 {
			f(i)
		}
	})
	for i := 1; i < n; i += 2 {
		f(i)
	}
	wg.Wait()
}
