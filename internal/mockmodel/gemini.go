package mockmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Gemini RPC names, the part after the colon in
// /v1beta/models/{model}:{rpc}.
const (
	rpcStream      = "streamGenerateContent"
	rpcGenerate    = "generateContent"
	rpcCountTokens = "countTokens"
)

// geminiPath splits "/v1beta/models/{model}:{rpc}" (also /v1 and /v1alpha).
func geminiPath(path string) (model, rpc string, ok bool) {
	for _, prefix := range []string{"/v1beta/models/", "/v1/models/", "/v1alpha/models/"} {
		rest, found := strings.CutPrefix(path, prefix)
		if !found {
			continue
		}
		i := strings.LastIndexByte(rest, ':')
		if i <= 0 {
			return "", "", false
		}
		model, rpc = rest[:i], rest[i+1:]
		switch rpc {
		case rpcStream, rpcGenerate, rpcCountTokens:
			return model, rpc, true
		}
		return "", "", false
	}
	return "", "", false
}

// geminiRequest is the part of a generateContent request the mock reads.
type geminiRequest struct {
	// Tools hold functionDeclarations whose schema is in parameters
	// (OpenAPI-style, upper-case types) or parametersJsonSchema.
	Tools []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Parameters           json.RawMessage `json:"parameters"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	// Contents' tool results are functionResponse parts in a user turn:
	// {functionResponse:{name, id, response:{output|error}}}.
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			FunctionResponse *struct {
				Response json.RawMessage `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
}

func parseGemini(body []byte) (exchange, error) {
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return exchange{}, fmt.Errorf("decode generateContent request: %w", err)
	}
	var ex exchange
	for _, t := range req.Tools {
		for _, fd := range t.FunctionDeclarations {
			schema := fd.ParametersJSONSchema
			if len(schema) == 0 {
				schema = fd.Parameters
			}
			ex.tools = append(ex.tools, toolDecl{name: fd.Name, props: schemaProps(schema)})
		}
	}
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				ex.results = append(ex.results, geminiResultText(p.FunctionResponse.Response))
			}
		}
	}
	return ex, nil
}

// geminiResultText is the "output" (else "error") of a functionResponse's
// response object, else the response's JSON.
func geminiResultText(raw json.RawMessage) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) == nil {
		for _, key := range []string{"output", "error"} {
			if v, ok := fields[key]; ok {
				if t := textOf(v); t != "" {
					return t
				}
			}
		}
	}
	if t := textOf(raw); t != "" {
		return t
	}
	return string(raw)
}

// geminiHandler serves one model's RPC. The model comes from the path;
// streaming is decided by the RPC, and SSE by the alt=sse parameter
// (without it, streamGenerateContent returns a JSON array of chunks).
func geminiHandler(model, rpc string) func(*Server, http.ResponseWriter, *http.Request, *Request) {
	return func(s *Server, w http.ResponseWriter, r *http.Request, rec *Request) {
		if rpc == rpcCountTokens {
			serveGeminiCount(s, w, r, rec)
			return
		}
		sse := rpc == rpcStream && r.URL.Query().Get("alt") == "sse"
		adjust := func(ex *exchange) {
			ex.model, ex.stream = model, rpc == rpcStream
		}
		write := func(w http.ResponseWriter, rp reply) error {
			return writeGemini(w, rp, sse)
		}
		s.converse(w, r, rec, parseGemini, adjust, write)
	}
}

// serveGeminiCount answers :countTokens with {"totalTokens":N}.
func serveGeminiCount(s *Server, w http.ResponseWriter, r *http.Request, rec *Request) {
	body, ok := s.readBody(w, r, rec)
	if !ok {
		return
	}
	if !json.Valid(body) {
		s.fail(w, rec, http.StatusBadRequest, fmt.Errorf("decode countTokens request: invalid JSON"))
		return
	}
	if err := writeJSON(w, http.StatusOK, object{"totalTokens": tokens(len(body))}); err != nil {
		rec.Error = fmt.Sprintf("write response: %v", err)
	}
}

// writeGemini answers with one candidate holding one part: a functionCall
// of run_shell_command (args as an object) or a text part, with
// finishReason STOP either way. Streaming with SSE is a single "data:"
// line; the CLI would also concatenate the parts of several chunks.
func writeGemini(w http.ResponseWriter, rp reply, sse bool) error {
	part := object{"text": rp.text}
	if rp.kind == turnToolCall {
		part = object{"functionCall": object{"name": rp.tool.name, "args": rp.input()}}
	}
	resp := object{
		"candidates": []any{object{
			"content":      object{"role": "model", "parts": []any{part}},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": object{
			"promptTokenCount": rp.inTokens, "candidatesTokenCount": rp.outTokens(),
			"totalTokenCount": rp.inTokens + rp.outTokens(),
		},
		"modelVersion": rp.model,
		"responseId":   rp.id,
	}
	switch {
	case !rp.stream:
		return writeJSON(w, http.StatusOK, resp)
	case !sse:
		return writeJSON(w, http.StatusOK, []any{resp})
	}
	stream := startSSE(w)
	stream.send("", resp)
	return stream.err
}
