package mockmodel

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
)

// OpenCode's tools, abridged; "bash" takes command, timeout and workdir.
const opencodeTools = `[
 {"type":"function","function":{"name":"read","description":"Read a file","parameters":{"type":"object","properties":{"filePath":{"type":"string"}},"required":["filePath"]}}},
 {"type":"function","function":{"name":"bash","description":"Run a command","parameters":{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"number"},"workdir":{"type":"string"},"description":{"type":"string"}},"required":["command","description"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}}}]`

// chatBody is an OpenCode (@ai-sdk/openai-compatible) request.
func chatBody(stream bool, tools, messages string) string {
	toolsField := ""
	if tools != "" {
		toolsField = `"tools":` + tools + `,"tool_choice":"auto",`
	}
	return fmt.Sprintf(`{"model":"mock-model","max_tokens":32000,%s"stream":%t,
 "stream_options":{"include_usage":true},"messages":%s}`, toolsField, stream, messages)
}

const (
	chatFirst = `[{"role":"system","content":"You are opencode."},{"role":"user","content":"touch a file"}]`
	chatOne   = `[{"role":"system","content":"You are opencode."},{"role":"user","content":"touch a file"},
 {"role":"assistant","content":"","tool_calls":[{"id":"call_mock_0","type":"function","function":{"name":"bash","arguments":"{\"command\":\"echo one\"}"}}]},
 {"role":"tool","tool_call_id":"call_mock_0","content":"one\n"}]`
	chatTwo = `[{"role":"user","content":[{"type":"text","text":"touch a file"}]},
 {"role":"assistant","content":null,"tool_calls":[{"id":"call_mock_0","type":"function","function":{"name":"bash","arguments":"{}"}}]},
 {"role":"tool","tool_call_id":"call_mock_0","content":"one\n"},
 {"role":"assistant","content":null,"tool_calls":[{"id":"call_mock_1","type":"function","function":{"name":"bash","arguments":"{}"}}]},
 {"role":"tool","tool_call_id":"call_mock_1","content":[{"type":"text","text":"two"}]}]`
)

func TestChatTurns(t *testing.T) {
	t.Parallel()
	custom := `[{"type":"function","function":{"name":"container_exec","parameters":{"type":"object","properties":{"cmd":{"type":["string","null"]}}}}}]`
	cases := []protocolCase{
		{
			name: "first turn calls bash", body: chatBody(true, opencodeTools, chatFirst), stream: true,
			wantTool: "bash", wantArgs: map[string]any{"command": "echo one"}, wantCallID: "call_mock_0", wantTurn: "tool_call",
		},
		{
			name: "other shell-like tool with cmd", body: chatBody(true, custom, chatFirst), stream: true,
			wantTool: "container_exec", wantArgs: map[string]any{"cmd": "echo one"}, wantCallID: "call_mock_0", wantTurn: "tool_call",
		},
		{
			name: "tool message gives next step", body: chatBody(true, opencodeTools, chatOne), stream: true,
			wantTool: "bash", wantArgs: map[string]any{"command": "touch two.txt"}, wantCallID: "call_mock_1", wantTurn: "tool_call", wantResults: []string{"one\n"},
		},
		{
			name: "all results give final text", body: chatBody(true, opencodeTools, chatTwo), stream: true,
			wantText: []string{"All done.", "1. one\n", "2. two"}, wantTurn: "final", wantResults: []string{"one\n", "two"},
		},
		{
			name: "title request without tools", body: chatBody(true, "", chatFirst), stream: true,
			wantText: []string{sideText}, wantTurn: "side",
		},
		{
			name: "non-streaming tool call", body: chatBody(false, opencodeTools, chatFirst),
			wantTool: "bash", wantArgs: map[string]any{"command": "echo one"}, wantCallID: "call_mock_0", wantTurn: "tool_call",
		},
		{
			name: "non-streaming final", body: chatBody(false, opencodeTools, chatTwo),
			wantText: []string{"All done."}, wantTurn: "final", wantResults: []string{"one\n", "two"},
		},
	}
	for _, target := range []string{"/v1/chat/completions", "/chat/completions"} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			runProtocolCases(t, "POST", target, cases, decodeChat)
		})
	}
}

type chatToolCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	ToolCalls []chatToolCall `json:"tool_calls"`
}

type chatOut struct {
	Object  string `json:"object"`
	Choices []struct {
		Message      chatMessage `json:"message"`
		Delta        chatMessage `json:"delta"`
		FinishReason *string     `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		TotalTokens int `json:"total_tokens"`
	} `json:"usage"`
}

// decodeChat checks a Chat Completions reply's framing and extracts it.
func decodeChat(t *testing.T, rec *httptest.ResponseRecorder, stream bool) got {
	t.Helper()
	wantStream(t, rec, stream)
	var msg chatMessage
	var finish string
	if !stream {
		var c chatOut
		mustJSON(t, rec.Body.String(), &c)
		if c.Object != "chat.completion" || len(c.Choices) != 1 || c.Choices[0].FinishReason == nil || c.Usage == nil {
			t.Fatalf("bad completion %s", rec.Body)
		}
		msg, finish = c.Choices[0].Message, *c.Choices[0].FinishReason
	} else {
		events := parseSSE(t, rec.Body.String())
		if len(events) != 3 || events[2].data != "[DONE]" {
			t.Fatalf("want 2 chunks and [DONE], got %s", rec.Body)
		}
		for i, ev := range events[:2] {
			if ev.name != "" {
				t.Fatalf("chat SSE has event name %q", ev.name)
			}
			var c chatOut
			mustJSON(t, ev.data, &c)
			if c.Object != "chat.completion.chunk" || len(c.Choices) != 1 {
				t.Fatalf("bad chunk %s", ev.data)
			}
			ch := c.Choices[0]
			if i == 0 {
				if ch.FinishReason != nil {
					t.Fatalf("first chunk finishes: %s", ev.data)
				}
				msg = ch.Delta
				continue
			}
			if ch.FinishReason == nil || c.Usage == nil || c.Usage.TotalTokens == 0 {
				t.Fatalf("last chunk lacks finish_reason or usage: %s", ev.data)
			}
			finish = *ch.FinishReason
		}
		for _, tc := range msg.ToolCalls {
			if tc.Index == nil || *tc.Index != 0 {
				t.Fatalf("streamed tool call without index 0: %+v", tc)
			}
		}
	}
	if msg.Role != "assistant" {
		t.Fatalf("role %q", msg.Role)
	}
	if len(msg.ToolCalls) == 1 {
		tc := msg.ToolCalls[0]
		if finish != "tool_calls" || tc.Type != "function" {
			t.Fatalf("bad tool call (finish %q): %+v", finish, tc)
		}
		return got{tool: tc.Function.Name, args: argsOf(t, tc.Function.Arguments), callID: tc.ID}
	}
	if finish != "stop" || msg.Content == nil || strings.TrimSpace(*msg.Content) == "" {
		t.Fatalf("bad text reply (finish %q): %s", finish, rec.Body)
	}
	return got{text: *msg.Content}
}
