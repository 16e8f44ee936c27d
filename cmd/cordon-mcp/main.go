// Command cordon-mcp is cordon's MCP server: "cordon mcp [flags]", which
// cordon executes from beside itself, or this program started directly
// by an MCP client with the same flags. It is a program of its own so
// that cordon run never links or initialises the MCP SDK. See README.md.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/audit"
	"github.com/cordon-sandbox/cordon/internal/cli"
	"github.com/cordon-sandbox/cordon/internal/launch"
	"github.com/cordon-sandbox/cordon/internal/mcp/mcpserver"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/policy"
)

func main() {
	os.Exit(cli.MainMCP(os.Args[1:], serve))
}

// serve is the MCP server on stdio under policy p; its run_command runs
// the helper cordon-helper beside this program.
func serve(p *policy.Policy, h policy.Host) error {
	var lg *audit.Log
	if p.Audit.Enabled && p.Audit.LogDenied && p.Audit.LogFile != "" {
		var err error
		if lg, err = audit.Open(p.Audit.LogFile, p.Audit.MaxSize()); err != nil {
			return err
		}
		defer lg.Close()
	}
	srv, err := mcpserver.New(mcpserver.Options{
		Policy:    p,
		Audit:     lg,
		SessionID: audit.NewSessionID(),
		Version:   cli.BuildVersion(),
		Plan:      plan.Options{Home: h.Home, Getenv: h.Getenv, StateDir: h.StateDir()},
		Helper:    launch.SiblingHelper,
		// Where run_command saves a network answer "for this
		// workspace", as cordon run --ask does.
		UserConfig: policy.UserConfigPath(h),
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	if pl, err := plan.Build(p, []string{"true"}, plan.Options{Home: h.Home, Getenv: h.Getenv, StateDir: h.StateDir(), Host: launch.HostFacts(p, launch.SiblingHelper)}); err == nil && pl.Backend == backend.Bwrap {
		// As cordon run: bwrap's init comes back to the server, which
		// reaps it for the command's CPU time (run_command names a CPU
		// limit it reached only with that figure). Only on bwrap:
		// without a pid namespace a command's orphans would come back
		// too, and a server that runs commands side by side cannot tell
		// whose they are.
		_ = launch.BecomeSubreaper()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tuneServer()
	if err := srv.Run(ctx, &mcpserver.StreamTransport{Reader: os.Stdin, Writer: stdout{os.Stdout}}); err != nil && ctx.Err() == nil {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

// stdout is os.Stdout with a Close that leaves it open, as the SDK's
// StdioTransport does.
type stdout struct{ io.Writer }

func (stdout) Close() error { return nil }

// tuneServer makes a long-running server fast. Each read_file of a large
// file makes about 1 MB of garbage while the live heap stays a few MB, so
// the default GOGC=100 collects on almost every call; 400 halves the
// server's time per call for a few more MB of heap (an explicit GOGC
// wins). The heap may then grow to five times what is live, which for
// the copies of a 100 MB write_file is about 2 GB, so a soft memory limit
// of 1 GiB (unless GOMEMLIMIT is set) makes the collector work harder in
// that case only. A bigger stdout pipe lets a large reply go out in one
// write.
func tuneServer() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(400)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(1 << 30)
	}
	growStdoutPipe()
}
