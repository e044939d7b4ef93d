package mockmodel

import (
	"fmt"
	"net/http/httptest"
	"testing"
)

// claudeTools is Claude Code's tool list, abridged: Bash first among
// decoys that also mention "shell" or "bash", and a server tool.
const claudeTools = `[
 {"name":"KillShell","description":"kill","input_schema":{"type":"object","properties":{"shell_id":{"type":"string"}},"required":["shell_id"]}},
 {"name":"Bash","description":"Run a command","input_schema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"number"},"description":{"type":"string"},"run_in_background":{"type":"boolean"},"dangerouslyDisableSandbox":{"type":"boolean"}},"required":["command"],"additionalProperties":false}},
 {"type":"web_search_20250305","name":"web_search","max_uses":5}]`

// claudeBody is a Claude Code Messages request with the given tools and
// messages.
func claudeBody(stream bool, tools, messages string) string {
	return fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":32000,"stream":%t,
 "system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],
 "tools":%s,"thinking":{"type":"enabled","budget_tokens":4000},
 "context_management":{"edits":[]},"metadata":{"user_id":"user_abc"},
 "messages":%s}`, stream, tools, messages)
}

const (
	claudeFirst = `[{"role":"user","content":[{"type":"text","text":"touch a file"}]}]`
	// claudeOneString has one tool result whose content is a string.
	claudeOneString = `[{"role":"user","content":"touch a file"},
 {"role":"assistant","content":[{"type":"tool_use","id":"toolu_mock_0","name":"Bash","input":{"command":"echo one"}}]},
 {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_mock_0","content":"one","is_error":false}]}]`
	// claudeTwoBlocks has two tool results, the second an array of text blocks.
	claudeTwoBlocks = `[{"role":"user","content":"touch a file"},
 {"role":"assistant","content":[{"type":"tool_use","id":"toolu_mock_0","name":"Bash","input":{"command":"echo one"}}]},
 {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_mock_0","content":"one","is_error":false}]},
 {"role":"assistant","content":[{"type":"text","text":"next"},{"type":"tool_use","id":"toolu_mock_1","name":"Bash","input":{"command":"touch two.txt"}}]},
 {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_mock_1","content":[{"type":"text","text":"created"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}},{"type":"text","text":"two.txt"}],"is_error":true}]}]`
)

func TestAnthropicTurns(t *testing.T) {
	t.Parallel()
	step0 := map[string]any{"command": "echo one"}
	step1 := map[string]any{"command": "touch two.txt"}
	cases := []protocolCase{
		{
			name: "first turn calls Bash", body: claudeBody(true, claudeTools, claudeFirst), stream: true,
			wantTool: "Bash", wantArgs: step0, wantCallID: "toolu_mock_0", wantTurn: "tool_call",
		},
		{
			name: "string tool result gives next step", body: claudeBody(true, claudeTools, claudeOneString), stream: true,
			wantTool: "Bash", wantArgs: step1, wantCallID: "toolu_mock_1", wantTurn: "tool_call", wantResults: []string{"one"},
		},
		{
			name: "block tool results give final text", body: claudeBody(true, claudeTools, claudeTwoBlocks), stream: true,
			wantText: []string{"All done.", "1. one", "2. created\ntwo.txt"}, wantTurn: "final", wantResults: []string{"one", "created\ntwo.txt"},
		},
		{
			name: "no tools is a side call", body: claudeBody(true, `[]`, claudeFirst), stream: true,
			wantText: []string{sideText}, wantTurn: "side",
		},
		{
			name: "no tools key is a side call", body: `{"model":"claude-haiku","max_tokens":1,"messages":[{"role":"user","content":"quota"}]}`,
			wantText: []string{sideText}, wantTurn: "side",
		},
		{
			name: "non-streaming tool call", body: claudeBody(false, claudeTools, claudeFirst),
			wantTool: "Bash", wantArgs: step0, wantCallID: "toolu_mock_0", wantTurn: "tool_call",
		},
		{
			name: "non-streaming final", body: claudeBody(false, claudeTools, claudeTwoBlocks),
			wantText: []string{"All done."}, wantTurn: "final", wantResults: []string{"one", "created\ntwo.txt"},
		},
	}
	runProtocolCases(t, "POST", "/v1/messages?beta=true", cases, decodeAnthropic)
}

// decodeAnthropic checks a Messages reply's framing and extracts it.
func decodeAnthropic(t *testing.T, rec *httptest.ResponseRecorder, stream bool) got {
	t.Helper()
	wantStream(t, rec, stream)
	type block struct {
		Type  string         `json:"type"`
		ID    string         `json:"id"`
		Name  string         `json:"name"`
		Input map[string]any `json:"input"`
		Text  string         `json:"text"`
	}
	type message struct {
		Type       string  `json:"type"`
		Role       string  `json:"role"`
		Content    []block `json:"content"`
		StopReason *string `json:"stop_reason"`
	}
	if !stream {
		var m message
		mustJSON(t, rec.Body.String(), &m)
		if m.Type != "message" || m.Role != "assistant" || len(m.Content) != 1 || m.StopReason == nil {
			t.Fatalf("bad message %s", rec.Body)
		}
		b := m.Content[0]
		return got{tool: b.Name, args: b.Input, callID: b.ID, text: b.Text}
	}
	events := parseSSE(t, rec.Body.String())
	wantNames := []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if len(events) != len(wantNames) {
		t.Fatalf("got %d events, want %d: %s", len(events), len(wantNames), rec.Body)
	}
	var g got
	var stop string
	for i, ev := range events {
		var data struct {
			Type         string  `json:"type"`
			Message      message `json:"message"`
			ContentBlock block   `json:"content_block"`
			Delta        struct {
				Type        string `json:"type"`
				PartialJSON string `json:"partial_json"`
				Text        string `json:"text"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
		}
		mustJSON(t, ev.data, &data)
		if ev.name != wantNames[i] || data.Type != ev.name {
			t.Fatalf("event %d is %q (data type %q), want %q", i, ev.name, data.Type, wantNames[i])
		}
		switch ev.name {
		case "message_start":
			if data.Message.Role != "assistant" || data.Message.StopReason != nil {
				t.Fatalf("bad message_start %s", ev.data)
			}
		case "content_block_start":
			g.tool, g.callID = data.ContentBlock.Name, data.ContentBlock.ID
		case "content_block_delta":
			switch data.Delta.Type {
			case "input_json_delta":
				g.args = argsOf(t, data.Delta.PartialJSON)
			case "text_delta":
				g.text = data.Delta.Text
			default:
				t.Fatalf("bad delta %s", ev.data)
			}
		case "message_delta":
			stop = data.Delta.StopReason
		}
	}
	if want := map[bool]string{true: "tool_use", false: "end_turn"}[g.tool != ""]; stop != want {
		t.Errorf("stop_reason %q, want %q", stop, want)
	}
	return g
}
