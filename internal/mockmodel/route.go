package mockmodel

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// endpoint is a routed request: its API family, whether it needs
// Options.RequireKey, and its handler.
type endpoint struct {
	api    string
	auth   bool
	handle func(s *Server, w http.ResponseWriter, r *http.Request, rec *Request)
}

// route maps a request to its endpoint. Paths are matched with and without
// the /v1 prefix where clients differ: Codex and OpenCode append
// "/responses" and "/chat/completions" to a configured base URL.
func route(method, path string) endpoint {
	switch {
	case path == "/":
		// Claude Code sends HEAD {BASE}/ before its first message.
		return allow(method, endpoint{handle: serveRoot}, http.MethodGet, http.MethodHead)
	case strings.HasPrefix(path, "/api/claude_code/"):
		// Claude Code's settings and feature endpoints: absent here.
		return endpoint{api: apiAnthropic, handle: notFound}
	case path == "/v1/messages":
		return allow(method, endpoint{api: apiAnthropic, auth: true, handle: serveAnthropic}, http.MethodPost)
	case path == "/v1/messages/count_tokens":
		return allow(method, endpoint{api: apiAnthropic, auth: true, handle: serveAnthropicCount}, http.MethodPost)
	case path == "/v1/responses" || path == "/responses":
		return allow(method, endpoint{api: apiOpenAI, auth: true, handle: serveResponses}, http.MethodPost)
	case path == "/v1/chat/completions" || path == "/chat/completions":
		return allow(method, endpoint{api: apiOpenAI, auth: true, handle: serveChat}, http.MethodPost)
	case path == "/v1/models" || path == "/models":
		return allow(method, endpoint{api: apiOpenAI, auth: true, handle: serveModels}, http.MethodGet)
	}
	if model, rpc, ok := geminiPath(path); ok {
		return allow(method, endpoint{api: apiGemini, auth: true, handle: geminiHandler(model, rpc)}, http.MethodPost)
	}
	return endpoint{handle: notFound}
}

// allow returns ep when method is one of methods, else a 405 endpoint.
func allow(method string, ep endpoint, methods ...string) endpoint {
	if slices.Contains(methods, method) {
		return ep
	}
	return endpoint{api: ep.api, handle: func(s *Server, w http.ResponseWriter, _ *http.Request, rec *Request) {
		w.Header().Set("Allow", strings.Join(methods, ", "))
		s.fail(w, rec, http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed", method))
	}}
}

func serveRoot(_ *Server, w http.ResponseWriter, r *http.Request, _ *Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write([]byte("warden mock model\n"))
	}
}

func notFound(s *Server, w http.ResponseWriter, _ *http.Request, rec *Request) {
	s.fail(w, rec, http.StatusNotFound, errors.New("no such endpoint"))
}

// mockModels are listed by GET /v1/models.
var mockModels = []string{defaultModel, "claude-sonnet-4-5", "gpt-5", "gemini-2.5-flash"}

// serveModels lists models in the OpenAI shape, with Anthropic's
// type/display_name fields as well, for clients that probe.
func serveModels(s *Server, w http.ResponseWriter, _ *http.Request, rec *Request) {
	data := make([]any, len(mockModels))
	for i, id := range mockModels {
		data[i] = object{"id": id, "object": "model", "type": "model", "display_name": id, "created": 0, "owned_by": "warden-mockmodel"}
	}
	if err := writeJSON(w, http.StatusOK, object{"object": "list", "data": data, "has_more": false}); err != nil {
		rec.Error = fmt.Sprintf("write response: %v", err)
	}
}
