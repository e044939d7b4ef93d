package mockmodel

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fuzzTargets are the endpoints FuzzHandler feeds, indexed by its first
// argument.
var fuzzTargets = []struct{ method, target string }{
	{"POST", "/v1/messages?beta=true"},
	{"POST", "/v1/messages/count_tokens"},
	{"POST", "/v1/responses"},
	{"POST", "/chat/completions"},
	{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"},
	{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent"},
	{"POST", "/v1beta/models/gemini-2.5-flash:generateContent"},
	{"POST", "/v1beta/models/gemini-2.5-flash:countTokens"},
	{"GET", "/v1/models"},
	{"HEAD", "/"},
}

// validStatus are the statuses the handler may answer with.
var validStatus = map[int]bool{200: true, 400: true, 401: true, 404: true, 405: true, 413: true}

// FuzzHandler feeds arbitrary bodies to every endpoint: the handler must
// not panic, must answer a known status, and every SSE data line it sends
// must be JSON (or [DONE]). The seeds, which run as a unit test, are the
// request shapes of the other tests.
func FuzzHandler(f *testing.F) {
	seeds := []string{
		"", "{", "null", "[]", `{"stream":true}`, `{"stream":"yes"}`,
		claudeBody(true, claudeTools, claudeFirst),
		claudeBody(false, claudeTools, claudeTwoBlocks),
		codexBody(true, codexShell, codexTwo),
		codexBody(true, codexExecCommand, `"hi"`),
		chatBody(true, opencodeTools, chatTwo),
		chatBody(false, "", chatFirst),
		geminiBody(geminiTools, geminiTwo),
		geminiBody("", geminiFirst),
		`{"tools":[{"name":"bash","input_schema":{"properties":{"command":{"type":7}}}}],"messages":[{"content":[{"type":"tool_result","content":{"x":1}}]}]}`,
		`{"tools":[{"functionDeclarations":[{"name":"shell","parameters":"x"}]}],"contents":[{"parts":[{"functionResponse":{"response":null}}]}]}`,
		"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"content\":\"\xff\xfe\"}]}],\"tools\":[{\"name\":\"Bash\"}],\"stream\":true}",
	}
	for i := range fuzzTargets {
		for _, s := range seeds {
			f.Add(uint8(i), []byte(s), "")
		}
	}
	f.Add(uint8(0), []byte(claudeBody(true, claudeTools, claudeFirst)), "x-api-key")
	f.Fuzz(func(t *testing.T, which uint8, body []byte, key string) {
		ft := fuzzTargets[int(which)%len(fuzzTargets)]
		s := New(Options{Script: testScript, RequireKey: "k3y"})
		req := httptest.NewRequest(ft.method, ft.target, bytes.NewReader(body))
		if key != "" {
			req.Header.Set("x-api-key", key)
			req.Header.Set("Authorization", "Bearer "+key)
		} else {
			req.Header.Set("x-goog-api-key", "k3y")
			req.Header.Set("x-api-key", "k3y")
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if !validStatus[rec.Code] {
			t.Fatalf("status %d", rec.Code)
		}
		checkFuzzBody(t, rec)
		if reqs := s.Requests(); len(reqs) != 1 || reqs[0].Status != rec.Code {
			t.Fatalf("log %+v does not match status %d", reqs, rec.Code)
		}
	})
}

// checkFuzzBody checks the body is well-formed for its content type.
func checkFuzzBody(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	body := rec.Body.String()
	switch rec.Header().Get("Content-Type") {
	case "text/event-stream":
		for line := range strings.SplitSeq(body, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if ok && data != "[DONE]" && !json.Valid([]byte(data)) {
				t.Fatalf("SSE data is not JSON: %q", data)
			}
		}
	case "application/json":
		if !json.Valid([]byte(body)) {
			t.Fatalf("body is not JSON: %q", body)
		}
	default:
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d with Content-Type %q", rec.Code, rec.Header().Get("Content-Type"))
		}
	}
}
