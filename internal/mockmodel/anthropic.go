package mockmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// anthropicRequest is the part of a Messages request the mock reads.
type anthropicRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	Messages []struct {
		Role string `json:"role"`
		// Content is a string or an array of blocks.
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// anthropicBlock is one content block; tool_result blocks carry content as
// a string or an array of text (and image) blocks.
type anthropicBlock struct {
	Type    string          `json:"type"`
	Content json.RawMessage `json:"content"`
}

func parseAnthropic(body []byte) (exchange, error) {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return exchange{}, fmt.Errorf("decode messages request: %w", err)
	}
	ex := exchange{model: req.Model, stream: req.Stream}
	for _, t := range req.Tools {
		// Server tools (web_search_...) have no input_schema; they are
		// never shell-like, and pickShell skips them by name.
		ex.tools = append(ex.tools, toolDecl{name: t.Name, props: schemaProps(t.InputSchema)})
	}
	for _, m := range req.Messages {
		if len(m.Content) == 0 || m.Content[0] != '[' {
			continue // a plain string holds no tool results
		}
		var blocks []anthropicBlock
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			return exchange{}, fmt.Errorf("decode %s message content: %w", m.Role, err)
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				ex.results = append(ex.results, textOf(b.Content))
			}
		}
	}
	return ex, nil
}

func serveAnthropic(s *Server, w http.ResponseWriter, r *http.Request, rec *Request) {
	s.converse(w, r, rec, parseAnthropic, nil, writeAnthropic)
}

// serveAnthropicCount answers POST /v1/messages/count_tokens with a fake
// count: {"input_tokens":N}.
func serveAnthropicCount(s *Server, w http.ResponseWriter, r *http.Request, rec *Request) {
	body, ok := s.readBody(w, r, rec)
	if !ok {
		return
	}
	if !json.Valid(body) {
		s.fail(w, rec, http.StatusBadRequest, fmt.Errorf("decode count_tokens request: invalid JSON"))
		return
	}
	if err := writeJSON(w, http.StatusOK, object{"input_tokens": tokens(len(body))}); err != nil {
		rec.Error = fmt.Sprintf("write response: %v", err)
	}
}

// writeAnthropic answers with one content block: a tool_use block calling
// the shell tool (stop_reason "tool_use") or a text block ("end_turn").
//
// Streaming is the event sequence message_start, content_block_start,
// content_block_delta (input_json_delta with the whole input as a string,
// or text_delta), content_block_stop, message_delta (stop_reason, usage),
// message_stop. Non-streaming is one message object.
func writeAnthropic(w http.ResponseWriter, rp reply) error {
	var full, start, delta object
	stop := "end_turn"
	if rp.kind == turnToolCall {
		stop = "tool_use"
		id := rp.callID("toolu")
		full = object{"type": "tool_use", "id": id, "name": rp.tool.name, "input": rp.input()}
		start = object{"type": "tool_use", "id": id, "name": rp.tool.name, "input": object{}}
		delta = object{"type": "input_json_delta", "partial_json": rp.arguments()}
	} else {
		full = object{"type": "text", "text": rp.text}
		start = object{"type": "text", "text": ""}
		delta = object{"type": "text_delta", "text": rp.text}
	}
	msg := func(content []any, stopReason any, outTokens int) object {
		return object{
			"id": "msg_" + rp.id, "type": "message", "role": "assistant", "model": rp.model,
			"content": content, "stop_reason": stopReason, "stop_sequence": nil,
			"usage": object{"input_tokens": rp.inTokens, "output_tokens": outTokens},
		}
	}
	if !rp.stream {
		return writeJSON(w, http.StatusOK, msg([]any{full}, stop, rp.outTokens()))
	}
	sse := startSSE(w)
	sse.send("message_start", object{"type": "message_start", "message": msg([]any{}, nil, 1)})
	sse.send("content_block_start", object{"type": "content_block_start", "index": 0, "content_block": start})
	sse.send("content_block_delta", object{"type": "content_block_delta", "index": 0, "delta": delta})
	sse.send("content_block_stop", object{"type": "content_block_stop", "index": 0})
	sse.send("message_delta", object{
		"type":  "message_delta",
		"delta": object{"stop_reason": stop, "stop_sequence": nil},
		"usage": object{"output_tokens": rp.outTokens()},
	})
	sse.send("message_stop", object{"type": "message_stop"})
	return sse.err
}
