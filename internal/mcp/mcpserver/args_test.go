//go:build unix

package mcpserver

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestNumericArguments: every number an agent gives is range-checked:
// negative, fractional, reversed and unrepresentable values are errors
// (cordon's tool errors, or the SDK's when the schema or the decoding
// refuses the number), never wrapped around; a value past the end of what
// there is just reads or finds less; and the server keeps serving.
func TestNumericArguments(t *testing.T) {
	e := start(t, "standard")
	for _, tc := range []struct {
		tool string
		args string
		want string // in the tool error; "" means a success
	}{
		{ToolReadFile, `{"path":"a.txt","start_line":-1}`, "start_line -1 is out of range"},
		{ToolReadFile, `{"path":"a.txt","end_line":-3}`, "end_line -3 is out of range"},
		{ToolReadFile, `{"path":"a.txt","start_line":3,"end_line":2}`, "start_line 3 is after end_line 2"},
		{ToolReadFile, `{"path":"a.txt","start_line":1.5}`, "start_line"},
		{ToolReadFile, `{"path":"a.txt","start_line":1e400}`, "start_line"},
		{ToolReadFile, `{"path":"a.txt","start_line":9223372036854775808}`, "start_line"},
		{ToolReadFile, `{"path":"a.txt","start_line":9223372036854775807}`, "start_line"},
		{ToolReadFile, `{"path":"a.txt","start_line":9007199254740992}`, ""},
		{ToolReadFile, `{"path":"a.txt","start_line":2,"end_line":9007199254740992}`, ""},
		{ToolReadFile, `{"path":"a.txt","start_line":0,"end_line":0}`, ""},
		{ToolGrep, `{"pattern":"a","max_results":-1}`, "max_results -1 is out of range"},
		{ToolGrep, `{"pattern":"a","max_results":9223372036854775807}`, "max_results"},
		{ToolGrep, `{"pattern":"a","max_results":9007199254740992}`, ""},
		{ToolGrep, `{"pattern":"a","max_results":0.5}`, "max_results"},
		{ToolRunCommand, `{"argv":["true"],"timeout_seconds":-1}`, "timeout_seconds -1 is out of range"},
		{ToolRunCommand, `{"argv":["true"],"timeout_seconds":-9223372036854775808}`, "timeout_seconds"},
		{ToolRunCommand, `{"argv":["true"],"timeout_seconds":-9007199254740992}`, "is out of range"},
		{ToolRunCommand, `{"argv":["true"],"timeout_seconds":9223372037}`, ""},
		{ToolRunCommand, `{"argv":["true"],"timeout_seconds":0.5}`, "timeout_seconds"},
		{ToolRunCommand, `{"argv":["true"],"timeout_seconds":1e19}`, "timeout_seconds"},
		{ToolRunCommand, `{"argv":["true"],"max_output_bytes":-1}`, "max_output_bytes -1 is out of range"},
		{ToolRunCommand, `{"argv":["true"],"max_output_bytes":1.5}`, "max_output_bytes"},
	} {
		var args map[string]any
		dec := json.NewDecoder(strings.NewReader(tc.args))
		dec.UseNumber()
		if err := dec.Decode(&args); err != nil {
			t.Fatal(err)
		}
		res, err := e.cs.CallTool(t.Context(), toolParams(tc.tool, args))
		var out string
		isErr := err != nil
		if err != nil {
			out = err.Error()
		} else {
			out, isErr = resultText(res), res.IsError
		}
		switch {
		case tc.want == "" && isErr:
			t.Errorf("%s %s: error %q", tc.tool, tc.args, out)
		case tc.want != "" && (!isErr || !strings.Contains(out, tc.want)):
			t.Errorf("%s %s: got isError=%v %q, want an error with %q", tc.tool, tc.args, isErr, out, tc.want)
		}
		e.ok(t, ToolFileInfo, map[string]any{"path": "a.txt"})
	}
}

func toolParams(name string, args map[string]any) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: name, Arguments: args}
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestTimeout: timeout_seconds can only shorten the policy's timeout (or
// MaxTimeout when the policy has none); no value wraps around to a
// negative or unlimited duration.
func TestTimeout(t *testing.T) {
	for _, tc := range []struct {
		policy  time.Duration
		seconds int
		want    time.Duration
		capped  bool
		err     bool
	}{
		{0, 0, DefaultTimeout, false, false},
		{0, 5, 5 * time.Second, false, false},
		{0, 3600, time.Hour, false, false},
		{0, 3601, MaxTimeout, true, false},
		{0, 9223372037, MaxTimeout, true, false},
		{0, math.MaxInt, MaxTimeout, true, false},
		{0, -1, 0, false, true},
		{0, math.MinInt, 0, false, true},
		{time.Second, 0, time.Second, false, false},
		{time.Second, 1, time.Second, false, false},
		{time.Second, 2, time.Second, true, false},
		{time.Second, 9223372037, time.Second, true, false},
		{time.Second, math.MaxInt, time.Second, true, false},
		{1500 * time.Millisecond, 1, time.Second, false, false},
		{1500 * time.Millisecond, 2, 1500 * time.Millisecond, true, false},
		{10 * time.Minute, 0, 10 * time.Minute, false, false},
	} {
		s := &Server{p: &policy.Policy{Timeout: tc.policy}, opts: Options{DefaultTimeout: DefaultTimeout}}
		d, capped, err := s.timeout(tc.seconds)
		if (err != nil) != tc.err || d != tc.want || capped != tc.capped {
			t.Errorf("policy %s, timeout_seconds %d: got %s capped=%v err=%v, want %s capped=%v err=%v",
				tc.policy, tc.seconds, d, capped, err, tc.want, tc.capped, tc.err)
		}
	}
}
