package mockmodel

import (
	"fmt"
	"net/http/httptest"
	"testing"
)

// geminiTools is Gemini CLI's tool list, abridged: run_shell_command with
// parametersJsonSchema, another tool with OpenAPI-style parameters.
const geminiTools = `[{"functionDeclarations":[
 {"name":"read_file","description":"Read","parameters":{"type":"OBJECT","properties":{"absolute_path":{"type":"STRING"}}}},
 {"name":"run_shell_command","description":"Run","parametersJsonSchema":{"type":"object","properties":{"command":{"type":"string"},"description":{"type":"string"},"dir_path":{"type":"string"},"is_background":{"type":"boolean"},"delay_ms":{"type":"number"}},"required":["command"]}}]}]`

// geminiBody is a Gemini CLI generateContent request.
func geminiBody(tools, contents string) string {
	toolsField := ""
	if tools != "" {
		toolsField = `"tools":` + tools + `,`
	}
	return fmt.Sprintf(`{"contents":%s,"systemInstruction":{"role":"user","parts":[{"text":"You are Gemini CLI."}]},
 %s"generationConfig":{"temperature":0,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":-1}}}`, contents, toolsField)
}

const (
	geminiFirst = `[{"role":"user","parts":[{"text":"touch a file"}]}]`
	geminiOne   = `[{"role":"user","parts":[{"text":"touch a file"}]},
 {"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"echo one"}}}]},
 {"role":"user","parts":[{"functionResponse":{"id":"run_shell_command-1-abc","name":"run_shell_command","response":{"output":"Command: echo one\nOutput: one"}}}]}]`
	geminiTwo = `[{"role":"user","parts":[{"text":"touch a file"}]},
 {"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"echo one"}}}]},
 {"role":"user","parts":[{"functionResponse":{"id":"a","name":"run_shell_command","response":{"output":"one"}}}]},
 {"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"touch two.txt"}}}]},
 {"role":"user","parts":[{"functionResponse":{"id":"b","name":"run_shell_command","response":{"error":"denied by hook"}}}]}]`
)

func TestGeminiTurns(t *testing.T) {
	t.Parallel()
	const base = "/v1beta/models/gemini-2.5-flash"
	step0 := map[string]any{"command": "echo one"}
	cases := []struct {
		target string
		stream bool
		protocolCase
	}{
		{base + ":streamGenerateContent?alt=sse", true, protocolCase{
			name: "first turn calls run_shell_command", body: geminiBody(geminiTools, geminiFirst),
			wantTool: "run_shell_command", wantArgs: step0, wantTurn: "tool_call",
		}},
		{base + ":streamGenerateContent?alt=sse", true, protocolCase{
			name: "functionResponse output gives next step", body: geminiBody(geminiTools, geminiOne),
			wantTool: "run_shell_command", wantArgs: map[string]any{"command": "touch two.txt"}, wantTurn: "tool_call", wantResults: []string{"Command: echo one\nOutput: one"},
		}},
		{base + ":streamGenerateContent?alt=sse", true, protocolCase{
			name: "functionResponse error counts", body: geminiBody(geminiTools, geminiTwo),
			wantText: []string{"All done.", "1. one", "2. denied by hook"}, wantTurn: "final", wantResults: []string{"one", "denied by hook"},
		}},
		{base + ":generateContent", false, protocolCase{
			name: "router call without tools", body: geminiBody("", geminiFirst),
			wantText: []string{sideText}, wantTurn: "side",
		}},
		{base + ":generateContent", false, protocolCase{
			name: "non-streaming tool call", body: geminiBody(geminiTools, geminiFirst),
			wantTool: "run_shell_command", wantArgs: step0, wantTurn: "tool_call",
		}},
		{base + ":generateContent", false, protocolCase{
			name: "non-streaming final", body: geminiBody(geminiTools, geminiTwo),
			wantText: []string{"All done."}, wantTurn: "final", wantResults: []string{"one", "denied by hook"},
		}},
	}
	for _, tc := range cases {
		tc.protocolCase.stream = tc.stream
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runProtocolCases(t, "POST", tc.target, []protocolCase{tc.protocolCase}, decodeGemini)
		})
	}
}

// TestGeminiStreamWithoutSSE: without alt=sse, streamGenerateContent
// returns a JSON array of chunks.
func TestGeminiStreamWithoutSSE(t *testing.T) {
	t.Parallel()
	s := New(Options{Script: testScript})
	rec := do(t, s, "POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent", geminiBody(geminiTools, geminiFirst), nil)
	wantStream(t, rec, false)
	var chunks []geminiOut
	mustJSON(t, rec.Body.String(), &chunks)
	if len(chunks) != 1 || len(chunks[0].Candidates) != 1 {
		t.Fatalf("bad chunks %s", rec.Body)
	}
	if r := s.Requests()[0]; r.Model != "gemini-2.5-pro" || !r.Stream {
		t.Errorf("logged model %q stream %v", r.Model, r.Stream)
	}
}

type geminiOut struct {
	Candidates []struct {
		Content struct {
			Role  string `json:"role"`
			Parts []struct {
				Text         string `json:"text"`
				FunctionCall *struct {
					Name string         `json:"name"`
					Args map[string]any `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		TotalTokenCount int `json:"totalTokenCount"`
	} `json:"usageMetadata"`
}

// decodeGemini checks a generateContent reply's framing and extracts it.
func decodeGemini(t *testing.T, rec *httptest.ResponseRecorder, stream bool) got {
	t.Helper()
	wantStream(t, rec, stream)
	data := rec.Body.String()
	if stream {
		events := parseSSE(t, data)
		if len(events) != 1 || events[0].name != "" {
			t.Fatalf("want one unnamed data event, got %s", data)
		}
		data = events[0].data
	}
	var out geminiOut
	mustJSON(t, data, &out)
	if len(out.Candidates) != 1 || out.UsageMetadata == nil || out.UsageMetadata.TotalTokenCount == 0 {
		t.Fatalf("bad response %s", data)
	}
	c := out.Candidates[0]
	if c.Content.Role != "model" || c.FinishReason != "STOP" || len(c.Content.Parts) != 1 {
		t.Fatalf("bad candidate %s", data)
	}
	p := c.Content.Parts[0]
	if p.FunctionCall != nil {
		return got{tool: p.FunctionCall.Name, args: p.FunctionCall.Args}
	}
	return got{text: p.Text}
}
