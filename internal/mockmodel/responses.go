package mockmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// responsesRequest is the part of a Responses request the mock reads.
type responsesRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	// Tools are flat: {type:"function", name, parameters}. Other types
	// (web_search, custom, local_shell) have no parameters.
	Tools []struct {
		Type       string          `json:"type"`
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"tools"`
	// Input is a string or an array of items.
	Input json.RawMessage `json:"input"`
}

// responsesItem is one input item. Tool results are function_call_output
// items ({call_id, output}, output being a string or content parts), and
// likewise custom_tool_call_output and local_shell_call_output.
type responsesItem struct {
	Type   string          `json:"type"`
	Output json.RawMessage `json:"output"`
}

func parseResponses(body []byte) (exchange, error) {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return exchange{}, fmt.Errorf("decode responses request: %w", err)
	}
	ex := exchange{model: req.Model, stream: req.Stream}
	for _, t := range req.Tools {
		if t.Type == "" || t.Type == "function" {
			ex.tools = append(ex.tools, toolDecl{name: t.Name, props: schemaProps(t.Parameters)})
		}
	}
	if len(req.Input) == 0 || req.Input[0] != '[' {
		return ex, nil // a plain string prompt holds no tool results
	}
	var items []responsesItem
	if err := json.Unmarshal(req.Input, &items); err != nil {
		return exchange{}, fmt.Errorf("decode responses input: %w", err)
	}
	for _, it := range items {
		if strings.HasSuffix(it.Type, "_call_output") {
			ex.results = append(ex.results, textOf(it.Output))
		}
	}
	return ex, nil
}

func serveResponses(s *Server, w http.ResponseWriter, r *http.Request, rec *Request) {
	s.converse(w, r, rec, parseResponses, nil, writeResponses)
}

// writeResponses answers with one output item: a function_call (arguments
// as a JSON string) or an assistant message with one output_text part.
//
// Streaming is response.created, response.output_item.done and
// response.completed; the data's "type" repeats the event name. Codex
// treats a stream without response.completed as broken and retries.
// Non-streaming is the completed response object.
func writeResponses(w http.ResponseWriter, rp reply) error {
	var item object
	if rp.kind == turnToolCall {
		item = object{
			"type": "function_call", "id": rp.callID("fc"), "call_id": rp.callID("call"),
			"name": rp.tool.name, "arguments": rp.arguments(), "status": "completed",
		}
	} else {
		item = object{
			"type": "message", "id": "msg_" + rp.id, "role": "assistant", "status": "completed",
			"content": []any{object{"type": "output_text", "text": rp.text, "annotations": []any{}}},
		}
	}
	response := func(status string, output []any) object {
		return object{
			"id": "resp_" + rp.id, "object": "response", "created_at": rp.created,
			"status": status, "model": rp.model, "output": output,
		}
	}
	done := response("completed", []any{item})
	done["usage"] = object{
		"input_tokens":          rp.inTokens,
		"input_tokens_details":  object{"cached_tokens": 0},
		"output_tokens":         rp.outTokens(),
		"output_tokens_details": object{"reasoning_tokens": 0},
		"total_tokens":          rp.inTokens + rp.outTokens(),
	}
	if !rp.stream {
		return writeJSON(w, http.StatusOK, done)
	}
	sse := startSSE(w)
	sse.send("response.created", object{"type": "response.created", "response": response("in_progress", []any{})})
	sse.send("response.output_item.done", object{"type": "response.output_item.done", "output_index": 0, "item": item})
	sse.send("response.completed", object{"type": "response.completed", "response": done})
	return sse.err
}
