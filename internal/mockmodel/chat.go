package mockmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// chatRequest is the part of a Chat Completions request the mock reads.
type chatRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	// Messages' tool results are {role:"tool", tool_call_id, content},
	// content being a string or an array of text parts.
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func parseChat(body []byte) (exchange, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return exchange{}, fmt.Errorf("decode chat completions request: %w", err)
	}
	ex := exchange{model: req.Model, stream: req.Stream}
	for _, t := range req.Tools {
		if t.Type == "" || t.Type == "function" {
			ex.tools = append(ex.tools, toolDecl{name: t.Function.Name, props: schemaProps(t.Function.Parameters)})
		}
	}
	for _, m := range req.Messages {
		if m.Role == "tool" {
			ex.results = append(ex.results, textOf(m.Content))
		}
	}
	return ex, nil
}

func serveChat(s *Server, w http.ResponseWriter, r *http.Request, rec *Request) {
	s.converse(w, r, rec, parseChat, nil, writeChat)
}

// writeChat answers with one tool call (finish_reason "tool_calls") or a
// text message ("stop").
//
// Streaming is "data:" lines only: a chunk whose delta carries the role and
// the whole tool call or text, a chunk with an empty delta, the
// finish_reason and usage, then "data: [DONE]". Non-streaming is one
// chat.completion object.
func writeChat(w http.ResponseWriter, rp reply) error {
	id := "chatcmpl-" + rp.id
	finish := "stop"
	var call object
	if rp.kind == turnToolCall {
		finish = "tool_calls"
		call = object{
			"id": rp.callID("call"), "type": "function",
			"function": object{"name": rp.tool.name, "arguments": rp.arguments()},
		}
	}
	usage := object{
		"prompt_tokens": rp.inTokens, "completion_tokens": rp.outTokens(),
		"total_tokens": rp.inTokens + rp.outTokens(),
	}
	if !rp.stream {
		msg := object{"role": "assistant", "content": rp.text}
		if call != nil {
			msg["content"] = nil
			msg["tool_calls"] = []any{call}
		}
		return writeJSON(w, http.StatusOK, object{
			"id": id, "object": "chat.completion", "created": rp.created, "model": rp.model,
			"choices": []any{object{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   usage,
		})
	}
	chunk := func(delta object, finishReason any) object {
		return object{
			"id": id, "object": "chat.completion.chunk", "created": rp.created, "model": rp.model,
			"choices": []any{object{"index": 0, "delta": delta, "finish_reason": finishReason}},
		}
	}
	delta := object{"role": "assistant", "content": rp.text}
	if call != nil {
		// Streamed tool calls carry their position in "index".
		call["index"] = 0
		delta = object{"role": "assistant", "tool_calls": []any{call}}
	}
	last := chunk(object{}, finish)
	last["usage"] = usage
	sse := startSSE(w)
	sse.send("", chunk(delta, nil))
	sse.send("", last)
	sse.done()
	return sse.err
}
