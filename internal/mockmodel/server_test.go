package mockmodel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRoutes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, target, body string
		wantStatus                 int
		wantBody                   string // substring
	}{
		{"HEAD root", "HEAD", "/", "", 200, ""},
		{"GET root", "GET", "/", "", 200, "mock model"},
		{"POST root", "POST", "/", "", 405, `"error"`},
		{"claude_code settings", "GET", "/api/claude_code/settings", "", 404, `"not_found_error"`},
		{"count_tokens", "POST", "/v1/messages/count_tokens?beta=true", `{"messages":[]}`, 200, `{"input_tokens":`},
		{"count_tokens bad JSON", "POST", "/v1/messages/count_tokens", `{`, 400, `"invalid_request_error"`},
		{"GET messages", "GET", "/v1/messages", "", 405, `"type":"error"`},
		{"models", "GET", "/v1/models", "", 200, `"object":"list"`},
		{"models without prefix", "GET", "/models", "", 200, `"id":"mock-model"`},
		{"gemini countTokens", "POST", "/v1beta/models/gemini-2.5-flash:countTokens", `{"contents":[]}`, 200, `{"totalTokens":`},
		{"gemini unknown rpc", "POST", "/v1beta/models/gemini-2.5-flash:embedContent", `{}`, 404, ""},
		{"gemini no model", "POST", "/v1beta/models/:generateContent", `{}`, 404, ""},
		{"gemini GET", "GET", "/v1beta/models/gemini-2.5-flash:generateContent", "", 405, `"status":"INVALID_ARGUMENT"`},
		{"unknown path", "POST", "/v2/whatever", `{}`, 404, `"error"`},
		{"anthropic bad JSON", "POST", "/v1/messages", `{"messages":`, 400, `"invalid_request_error"`},
		{"anthropic wrong type", "POST", "/v1/messages", `{"messages":[{"role":"user","content":[1]}]}`, 400, ""},
		{"responses bad input", "POST", "/v1/responses", `{"input":[1]}`, 400, `"error"`},
		{"chat bad JSON", "POST", "/v1/chat/completions", `[`, 400, ""},
		{"gemini bad JSON", "POST", "/v1beta/models/g:generateContent", `{"contents":{}}`, 400, `"code":400`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := New(Options{Script: testScript})
			rec := do(t, s, tt.method, tt.target, tt.body, nil)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("body %q does not contain %q", rec.Body, tt.wantBody)
			}
			if rec.Code >= 400 && !json.Valid(rec.Body.Bytes()) {
				t.Errorf("error body is not JSON: %q", rec.Body)
			}
			reqs := s.Requests()
			if len(reqs) != 1 || reqs[0].Status != tt.wantStatus || reqs[0].Method != tt.method {
				t.Errorf("logged %+v", reqs)
			}
		})
	}
}

func TestBodyTooLarge(t *testing.T) {
	t.Parallel()
	s := New(Options{Script: testScript})
	body := io.MultiReader(strings.NewReader(`{"messages":"`), io.LimitReader(zeros{}, maxBody))
	req := httptest.NewRequest("POST", "/v1/messages", body)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", rec.Code)
	}
}

// zeros reads as endless '0' bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}

const secret = "sk-real-secret-0123456789"

func TestRequireKey(t *testing.T) {
	t.Parallel()
	claude := claudeBody(true, claudeTools, claudeFirst)
	chat := chatBody(true, opencodeTools, chatFirst)
	gemini := geminiBody(geminiTools, geminiFirst)
	tests := []struct {
		name, method, target, body string
		header                     map[string]string
		wantStatus                 int
		wantBody                   string
	}{
		{"anthropic no key", "POST", "/v1/messages", claude, nil, 401, `"authentication_error"`},
		{"anthropic placeholder key", "POST", "/v1/messages", claude, map[string]string{"x-api-key": "x"}, 401, `"authentication_error"`},
		{"anthropic real key", "POST", "/v1/messages", claude, map[string]string{"x-api-key": secret}, 200, "message_start"},
		{"anthropic bearer", "POST", "/v1/messages", claude, map[string]string{"Authorization": "Bearer " + secret}, 200, "message_start"},
		{"count_tokens no key", "POST", "/v1/messages/count_tokens", `{}`, nil, 401, ""},
		{"chat bearer", "POST", "/v1/chat/completions", chat, map[string]string{"Authorization": "Bearer " + secret}, 200, "[DONE]"},
		{"chat wrong bearer", "POST", "/v1/chat/completions", chat, map[string]string{"Authorization": "Bearer x"}, 401, `"authentication_error"`},
		{"chat basic scheme refused", "POST", "/v1/chat/completions", chat, map[string]string{"Authorization": "Basic " + secret}, 401, ""},
		{"responses no key", "POST", "/v1/responses", codexBody(true, codexExecCommand, codexFirst), nil, 401, `"error"`},
		{"gemini header key", "POST", "/v1beta/models/g:streamGenerateContent?alt=sse", gemini, map[string]string{"x-goog-api-key": secret}, 200, "functionCall"},
		{"gemini query key", "POST", "/v1beta/models/g:generateContent?key=" + secret, gemini, nil, 200, "functionCall"},
		{"gemini no key", "POST", "/v1beta/models/g:generateContent", gemini, nil, 401, `"UNAUTHENTICATED"`},
		{"models no key", "GET", "/v1/models", "", nil, 401, ""},
		{"HEAD root needs no key", "HEAD", "/", "", nil, 200, ""},
		{"claude_code still 404", "GET", "/api/claude_code/settings", "", nil, 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var log bytes.Buffer
			s := New(Options{Script: testScript, RequireKey: secret, Log: &log})
			rec := do(t, s, tt.method, tt.target, tt.body, tt.header)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("body %q does not contain %q", rec.Body, tt.wantBody)
			}
			if strings.Contains(log.String(), secret) {
				t.Errorf("log holds the secret: %s", log.String())
			}
		})
	}
}

// TestRedaction checks that no credential reaches the log or Requests,
// while their hashes do.
func TestRedaction(t *testing.T) {
	t.Parallel()
	// The secret is also in the prompt and in a tool result, as if an
	// agent had leaked it.
	messages := strings.ReplaceAll(claudeOneString, `"one"`, `"leaked `+secret+`"`)
	body := claudeBody(true, claudeTools, messages)
	header := map[string]string{
		"x-api-key":      secret,
		"Authorization":  "Bearer " + secret,
		"x-goog-api-key": secret,
		"Cookie":         "session=" + secret,
		"X-Custom-Token": secret,
		"X-Echo":         "value " + secret,
		"anthropic-beta": "claude-code-20250219",
	}
	for _, requireKey := range []string{"", secret} {
		t.Run(fmt.Sprintf("require=%t", requireKey != ""), func(t *testing.T) {
			t.Parallel()
			var log bytes.Buffer
			s := New(Options{Script: testScript, RequireKey: requireKey, Log: &log, RecordBodies: true})
			rec := do(t, s, "POST", "/v1/messages?beta=true&key="+secret, body, header)
			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			reqs := s.Requests()
			dump, err := json.Marshal(reqs)
			if err != nil {
				t.Fatal(err)
			}
			r := reqs[0]
			for _, name := range []string{CredAPIKey, CredAuthorization, CredGoogAPIKey, CredQueryKey} {
				c, ok := r.Credentials[name]
				if !ok || c.SHA256 != KeyHash(secret) {
					t.Errorf("credential %s = %+v (present %v), want hash %s", name, c, ok, KeyHash(secret))
				}
			}
			if r.Credentials[CredAuthorization].Scheme != "Bearer" {
				t.Errorf("authorization scheme %q", r.Credentials[CredAuthorization].Scheme)
			}
			for _, h := range []string{"x-api-key", "authorization", "x-goog-api-key", "cookie", "x-custom-token"} {
				if r.Headers[h] != redacted {
					t.Errorf("header %s = %q, want %s", h, r.Headers[h], redacted)
				}
			}
			if r.Headers["anthropic-beta"] != "claude-code-20250219" {
				t.Errorf("anthropic-beta = %q", r.Headers["anthropic-beta"])
			}
			if requireKey == "" {
				// Without RequireKey only credential headers and
				// parameters are known secrets; free text is kept.
				for _, s := range []string{string(dump), log.String()} {
					cleaned := strings.ReplaceAll(strings.ReplaceAll(s, "leaked "+secret, ""), "value "+secret, "")
					if strings.Contains(cleaned, secret) {
						t.Errorf("secret outside free text: %s", s)
					}
				}
				return
			}
			for what, s := range map[string]string{"Requests": string(dump), "log": log.String()} {
				if strings.Contains(s, secret) {
					t.Errorf("%s holds the secret: %s", what, s)
				}
			}
			if want := "leaked [REDACTED]"; len(r.ToolResults) != 1 || r.ToolResults[0] != want {
				t.Errorf("tool results %q, want [%q]", r.ToolResults, want)
			}
		})
	}
}

func TestLogLines(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	s := New(Options{Script: testScript, Log: &log})
	do(t, s, "HEAD", "/", "", nil)
	do(t, s, "POST", "/v1/chat/completions", chatBody(true, opencodeTools, chatOne), map[string]string{"User-Agent": "opencode/1"})
	do(t, s, "GET", "/nope", "", nil)
	var lines []Request
	sc := bufio.NewScanner(&log)
	for sc.Scan() {
		var r Request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("bad log line %q: %v", sc.Text(), err)
		}
		lines = append(lines, r)
	}
	if len(lines) != 3 {
		t.Fatalf("%d log lines, want 3", len(lines))
	}
	chat := lines[1]
	if chat.Seq != 2 || chat.API != apiOpenAI || chat.Turn != "tool_call" || chat.Command != "touch two.txt" ||
		chat.ShellTool != "bash" || chat.Headers["user-agent"] != "opencode/1" || chat.Model != "mock-model" || chat.Status != 200 {
		t.Errorf("chat log line %+v", chat)
	}
	if lines[2].Status != 404 || lines[2].Error == "" {
		t.Errorf("404 log line %+v", lines[2])
	}
	if lines[0].Body != "" || chat.Body != "" {
		t.Errorf("bodies recorded without RecordBodies")
	}
}

func TestRequestsIsACopy(t *testing.T) {
	t.Parallel()
	s := New(Options{Script: testScript})
	do(t, s, "POST", "/v1/chat/completions", chatBody(false, opencodeTools, chatOne), map[string]string{"X-A": "1"})
	r := s.Requests()
	r[0].ToolResults[0] = "changed"
	r[0].Headers["x-a"] = "changed"
	again := s.Requests()[0]
	if again.ToolResults[0] != "one\n" || again.Headers["x-a"] != "1" {
		t.Errorf("Requests shares state: %+v", again)
	}
}

// TestConversationOverHTTP drives each protocol through a real listener:
// tool calls for every step, then the final text, each request built from
// the previous replies, as a harness would.
func TestConversationOverHTTP(t *testing.T) {
	t.Parallel()
	s := New(Options{Script: testScript, RequireKey: secret})
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	post := func(t *testing.T, path, body string, header map[string]string) string {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), "POST", ts.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("status %d, err %v: %s", resp.StatusCode, err, b)
		}
		if resp.Header.Get("Content-Type") == "text/event-stream" && len(resp.TransferEncoding) == 0 && resp.ContentLength >= 0 {
			// Flushing makes net/http chunk the stream; harnesses need that
			// (or Connection: close) on kept-alive connections.
			t.Errorf("SSE response is not chunked: %v, length %d", resp.TransferEncoding, resp.ContentLength)
		}
		return string(b)
	}
	t.Run("anthropic", func(t *testing.T) {
		h := map[string]string{"x-api-key": secret, "anthropic-version": "2023-06-01"}
		msgs := []string{`{"role":"user","content":"go"}`}
		for k := range testScript.Steps {
			body := post(t, "/v1/messages?beta=true", claudeBody(true, claudeTools, "["+strings.Join(msgs, ",")+"]"), h)
			g := decodeAnthropic(t, recorderOf(body, "text/event-stream"), true)
			if g.tool != "Bash" || g.args["command"] != testScript.Steps[k].Command {
				t.Fatalf("turn %d: %+v", k, g)
			}
			msgs = append(msgs,
				fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":%q,"name":"Bash","input":{}}]}`, g.callID),
				fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"out%d"}]}`, g.callID, k))
		}
		body := post(t, "/v1/messages?beta=true", claudeBody(true, claudeTools, "["+strings.Join(msgs, ",")+"]"), h)
		if g := decodeAnthropic(t, recorderOf(body, "text/event-stream"), true); !strings.Contains(g.text, "1. out0\n2. out1") {
			t.Fatalf("final %+v", g)
		}
	})
	t.Run("gemini", func(t *testing.T) {
		h := map[string]string{"x-goog-api-key": secret}
		contents := []string{`{"role":"user","parts":[{"text":"go"}]}`}
		for k := range testScript.Steps {
			body := post(t, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", geminiBody(geminiTools, "["+strings.Join(contents, ",")+"]"), h)
			g := decodeGemini(t, recorderOf(body, "text/event-stream"), true)
			if g.tool != "run_shell_command" || g.args["command"] != testScript.Steps[k].Command {
				t.Fatalf("turn %d: %+v", k, g)
			}
			contents = append(contents,
				`{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{}}}]}`,
				fmt.Sprintf(`{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"out%d"}}}]}`, k))
		}
		body := post(t, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", geminiBody(geminiTools, "["+strings.Join(contents, ",")+"]"), h)
		if g := decodeGemini(t, recorderOf(body, "text/event-stream"), true); !strings.Contains(g.text, "2. out1") {
			t.Fatalf("final %+v", g)
		}
	})
	for _, r := range s.Requests() {
		if r.Credentials[CredAPIKey].SHA256 != KeyHash(secret) && r.Credentials[CredGoogAPIKey].SHA256 != KeyHash(secret) {
			t.Errorf("request %d lacks the key hash: %+v", r.Seq, r.Credentials)
		}
	}
}

// recorderOf wraps a response body for the decoders.
func recorderOf(body, contentType string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", contentType)
	rec.WriteHeader(200)
	rec.Body.WriteString(body)
	return rec
}
