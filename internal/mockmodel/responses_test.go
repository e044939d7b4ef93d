package mockmodel

import (
	"fmt"
	"net/http/httptest"
	"testing"
)

// Codex's shell tools, one per model family.
const (
	codexExecCommand  = `{"type":"function","name":"exec_command","description":"Runs a command","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string"},"justification":{"type":"string"},"login":{"type":"boolean"},"max_output_tokens":{"type":"number"},"shell":{"type":"string"},"sandbox_permissions":{"type":"string"}},"required":["cmd"],"additionalProperties":false}}`
	codexShellCommand = `{"type":"function","name":"shell_command","parameters":{"type":"object","properties":{"command":{"type":"string"},"workdir":{"type":"string"}},"required":["command"]}}`
	codexShell        = `{"type":"function","name":"shell","parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}},"workdir":{"type":"string"}},"required":["command"]}}`
	codexOthers       = `{"type":"function","name":"write_stdin","parameters":{"type":"object","properties":{"session_id":{"type":"number"},"chars":{"type":"string"}}}},
 {"type":"function","name":"view_image","parameters":{"type":"object","properties":{"path":{"type":"string"}}}},
 {"type":"web_search","external_web_access":false},
 {"type":"custom","name":"apply_patch","format":{"type":"grammar","syntax":"lark","definition":"start: x"}}`
)

// codexBody is a Codex Responses request.
func codexBody(stream bool, shellTool, input string) string {
	tools := "[" + codexOthers + "]"
	if shellTool != "" {
		tools = "[" + codexOthers + "," + shellTool + "]"
	}
	return fmt.Sprintf(`{"model":"mock-model","instructions":"You are Codex.","input":%s,"tools":%s,
 "tool_choice":"auto","parallel_tool_calls":false,"reasoning":null,"store":false,"stream":%t,
 "include":["reasoning.encrypted_content"],"prompt_cache_key":"abc","client_metadata":{}}`, input, tools, stream)
}

const (
	codexFirst = `[{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions>"}]},
 {"type":"message","role":"user","content":[{"type":"input_text","text":"touch a file"}]}]`
	codexOne = `[{"type":"message","role":"user","content":[{"type":"input_text","text":"touch a file"}]},
 {"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"echo one\"}","call_id":"call_mock_0"},
 {"type":"function_call_output","call_id":"call_mock_0","output":"Chunk ID: 1\nProcess exited with code 0\nOutput:\none\n"}]`
	codexTwo = `[{"type":"message","role":"user","content":[{"type":"input_text","text":"touch a file"}]},
 {"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"echo one\"}","call_id":"call_mock_0"},
 {"type":"function_call_output","call_id":"call_mock_0","output":"one"},
 {"type":"reasoning","summary":[],"encrypted_content":"xyz"},
 {"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"touch two.txt\"}","call_id":"call_mock_1"},
 {"type":"function_call_output","call_id":"call_mock_1","output":[{"type":"input_text","text":"two"}]}]`
)

func TestResponsesTurns(t *testing.T) {
	t.Parallel()
	cases := []protocolCase{
		{
			name: "exec_command takes cmd", body: codexBody(true, codexExecCommand, codexFirst), stream: true,
			wantTool: "exec_command", wantArgs: map[string]any{"cmd": "echo one"}, wantCallID: "call_mock_0", wantTurn: "tool_call",
		},
		{
			name: "shell_command takes a command string", body: codexBody(true, codexShellCommand, codexFirst), stream: true,
			wantTool: "shell_command", wantArgs: map[string]any{"command": "echo one"}, wantCallID: "call_mock_0", wantTurn: "tool_call",
		},
		{
			name: "shell takes argv", body: codexBody(true, codexShell, codexFirst), stream: true,
			wantTool: "shell", wantArgs: map[string]any{"command": []any{"bash", "-lc", "echo one"}}, wantCallID: "call_mock_0", wantTurn: "tool_call",
		},
		{
			name: "function_call_output gives next step", body: codexBody(true, codexExecCommand, codexOne), stream: true,
			wantTool: "exec_command", wantArgs: map[string]any{"cmd": "touch two.txt"}, wantCallID: "call_mock_1", wantTurn: "tool_call",
			wantResults: []string{"Chunk ID: 1\nProcess exited with code 0\nOutput:\none\n"},
		},
		{
			name: "all outputs give final text", body: codexBody(true, codexExecCommand, codexTwo), stream: true,
			wantText: []string{"All done.", "1. one", "2. two"}, wantTurn: "final", wantResults: []string{"one", "two"},
		},
		{
			name: "no shell tool is a side call", body: codexBody(true, "", codexFirst), stream: true,
			wantText: []string{sideText}, wantTurn: "side",
		},
		{
			name: "string input", body: codexBody(true, codexExecCommand, `"hi"`), stream: true,
			wantTool: "exec_command", wantArgs: map[string]any{"cmd": "echo one"}, wantCallID: "call_mock_0", wantTurn: "tool_call",
		},
		{
			name: "non-streaming tool call", body: codexBody(false, codexExecCommand, codexFirst),
			wantTool: "exec_command", wantArgs: map[string]any{"cmd": "echo one"}, wantCallID: "call_mock_0", wantTurn: "tool_call",
		},
		{
			name: "non-streaming final", body: codexBody(false, codexExecCommand, codexTwo),
			wantText: []string{"All done."}, wantTurn: "final", wantResults: []string{"one", "two"},
		},
	}
	for _, target := range []string{"/v1/responses", "/responses"} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			runProtocolCases(t, "POST", target, cases, decodeResponses)
		})
	}
}

type responsesItemOut struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Role      string `json:"role"`
	Content   []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

type responsesOut struct {
	ID     string             `json:"id"`
	Status string             `json:"status"`
	Output []responsesItemOut `json:"output"`
	Usage  *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// decodeResponses checks a Responses reply's framing and extracts it.
func decodeResponses(t *testing.T, rec *httptest.ResponseRecorder, stream bool) got {
	t.Helper()
	wantStream(t, rec, stream)
	var item responsesItemOut
	if !stream {
		var r responsesOut
		mustJSON(t, rec.Body.String(), &r)
		if r.Status != "completed" || len(r.Output) != 1 || r.Usage == nil {
			t.Fatalf("bad response %s", rec.Body)
		}
		item = r.Output[0]
	} else {
		events := parseSSE(t, rec.Body.String())
		wantNames := []string{"response.created", "response.output_item.done", "response.completed"}
		if len(events) != len(wantNames) {
			t.Fatalf("got %d events, want %d: %s", len(events), len(wantNames), rec.Body)
		}
		var createdID string
		for i, ev := range events {
			var data struct {
				Type     string           `json:"type"`
				Response responsesOut     `json:"response"`
				Item     responsesItemOut `json:"item"`
			}
			mustJSON(t, ev.data, &data)
			if ev.name != wantNames[i] || data.Type != ev.name {
				t.Fatalf("event %d is %q (data type %q), want %q", i, ev.name, data.Type, wantNames[i])
			}
			switch ev.name {
			case "response.created":
				createdID = data.Response.ID
			case "response.output_item.done":
				item = data.Item
			case "response.completed":
				if data.Response.ID != createdID || data.Response.Usage == nil || data.Response.Usage.TotalTokens == 0 {
					t.Fatalf("bad response.completed %s", ev.data)
				}
			}
		}
	}
	switch item.Type {
	case "function_call":
		return got{tool: item.Name, args: argsOf(t, item.Arguments), callID: item.CallID}
	case "message":
		if item.Role != "assistant" || len(item.Content) != 1 || item.Content[0].Type != "output_text" {
			t.Fatalf("bad message item %+v", item)
		}
		return got{text: item.Content[0].Text}
	}
	t.Fatalf("bad item type %q", item.Type)
	return got{}
}
