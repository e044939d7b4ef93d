package mockmodel

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testScript is the script most tests run.
var testScript = Script{
	Steps: []Step{{Command: "echo one"}, {Command: "touch two.txt"}},
	Final: "All done.",
}

// do sends one request straight to h.
func do(t *testing.T, h http.Handler, method, target, body string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	name string // from "event:", empty if none
	data string // the "data:" line
}

// parseSSE checks the framing of an SSE body: every event is optional
// "event:" then exactly one "data:" line, events end with a blank line, and
// every data line is JSON (or Chat Completions' [DONE]).
func parseSSE(t *testing.T, body string) []sseEvent {
	t.Helper()
	if !strings.HasSuffix(body, "\n\n") {
		t.Fatalf("SSE body does not end with a blank line: %q", body)
	}
	var events []sseEvent
	for frame := range strings.SplitSeq(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		var ev sseEvent
		lines := strings.Split(frame, "\n")
		if name, ok := strings.CutPrefix(lines[0], "event: "); ok {
			ev.name = name
			lines = lines[1:]
		}
		if len(lines) != 1 {
			t.Fatalf("SSE frame %q: want exactly one data line", frame)
		}
		data, ok := strings.CutPrefix(lines[0], "data: ")
		if !ok {
			t.Fatalf("SSE frame %q: no data line", frame)
		}
		if data != "[DONE]" && !json.Valid([]byte(data)) {
			t.Fatalf("SSE data is not JSON: %q", data)
		}
		ev.data = data
		events = append(events, ev)
	}
	return events
}

// got is a reply decoded from any protocol.
type got struct {
	tool   string         // tool called, "" for a text reply
	args   map[string]any // tool arguments
	callID string
	text   string
}

// mustJSON decodes data into v.
func mustJSON(t *testing.T, data string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(data), v); err != nil {
		t.Fatalf("decode %q: %v", data, err)
	}
}

// argsOf decodes a JSON arguments string.
func argsOf(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	mustJSON(t, s, &m)
	return m
}

// wantStream checks the response is SSE or JSON as expected.
func wantStream(t *testing.T, rec *httptest.ResponseRecorder, stream bool) {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d, body %s", rec.Code, rec.Body)
	}
	ct := rec.Header().Get("Content-Type")
	if want := map[bool]string{true: "text/event-stream", false: "application/json"}[stream]; ct != want {
		t.Fatalf("Content-Type %q, want %q", ct, want)
	}
}

// protocolCase is one request in a protocol's turn table.
type protocolCase struct {
	name        string
	body        string
	stream      bool
	wantTool    string // "" for a text reply
	wantArgs    map[string]any
	wantCallID  string
	wantText    []string // substrings of the text reply
	wantResults []string // tool results recorded in the log
	wantTurn    string
}

// runProtocolCases sends each case to a fresh server and compares the
// decoded reply and the log entry.
func runProtocolCases(t *testing.T, method, target string, cases []protocolCase, decode func(*testing.T, *httptest.ResponseRecorder, bool) got) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := New(Options{Script: testScript})
			rec := do(t, s, method, target, tc.body, nil)
			g := decode(t, rec, tc.stream)
			if g.tool != tc.wantTool {
				t.Fatalf("tool %q, want %q (text %q)", g.tool, tc.wantTool, g.text)
			}
			if tc.wantTool != "" {
				if diff := cmp.Diff(tc.wantArgs, g.args); diff != "" {
					t.Errorf("args (-want +got):\n%s", diff)
				}
				if g.callID != tc.wantCallID {
					t.Errorf("call id %q, want %q", g.callID, tc.wantCallID)
				}
			}
			for _, sub := range tc.wantText {
				if !strings.Contains(g.text, sub) {
					t.Errorf("text %q does not contain %q", g.text, sub)
				}
			}
			reqs := s.Requests()
			if len(reqs) != 1 {
				t.Fatalf("logged %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Turn != tc.wantTurn {
				t.Errorf("logged turn %q, want %q", r.Turn, tc.wantTurn)
			}
			if strings.Join(r.ToolResults, "|") != strings.Join(tc.wantResults, "|") {
				t.Errorf("logged tool results %q, want %q", r.ToolResults, tc.wantResults)
			}
			if r.Stream != tc.stream {
				t.Errorf("logged stream %v, want %v", r.Stream, tc.stream)
			}
		})
	}
}
