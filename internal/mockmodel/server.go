package mockmodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxBody caps how much of a request body is read. Harness requests carry
// whole conversations plus tool schemas and can be large.
const maxBody = 32 << 20

// defaultModel names the model when a request does not.
const defaultModel = "mock-model"

// API families, as recorded in Request.API.
const (
	apiAnthropic = "anthropic"
	apiOpenAI    = "openai"
	apiGemini    = "gemini"
)

// Options configure a Server.
type Options struct {
	// Script is what the model does. The zero Script makes no tool calls
	// and answers "Done.".
	Script Script
	// RequireKey, when set, makes every model endpoint answer 401 unless
	// the request's x-api-key, Authorization Bearer token, x-goog-api-key
	// or "key" query parameter equals it.
	RequireKey string
	// Log, when set, receives one JSON line (a Request) per request.
	// Write errors are ignored.
	Log io.Writer
	// RecordBodies keeps each request body in Request.Body (with
	// RequireKey masked), for tests that assert on prompts.
	RecordBodies bool
}

// Server is the mock model, an http.Handler. It is safe for concurrent use.
type Server struct {
	opts  Options
	scrub scrubber
	seq   atomic.Uint64

	mu   sync.Mutex
	reqs []Request
}

var _ http.Handler = (*Server)(nil)

// New returns a Server that follows opts.Script.
func New(opts Options) *Server {
	return &Server{opts: opts, scrub: scrubber(opts.RequireKey)}
}

// Requests returns a copy of the log of finished requests, in the order
// they finished (Request.Seq gives arrival order).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	for i, r := range s.reqs {
		out[i] = r.clone()
	}
	return out
}

// ServeHTTP routes, checks the key, answers and records the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	creds := credentials(r)
	rec := &Request{
		Seq:         s.seq.Add(1),
		Time:        time.Now().UTC(),
		Method:      r.Method,
		Path:        s.scrub.scrub(r.URL.Path),
		Query:       s.scrub.query(r.URL),
		Headers:     s.scrub.headers(r.Header),
		Credentials: creds.hashed(),
	}
	sw := &statusWriter{ResponseWriter: w}
	ep := route(r.Method, r.URL.Path)
	rec.API = ep.api
	if ep.auth && s.opts.RequireKey != "" && !creds.has(s.opts.RequireKey) {
		s.fail(sw, rec, http.StatusUnauthorized, errors.New("missing or wrong API key"))
	} else {
		ep.handle(s, sw, r, rec)
	}
	rec.Status = sw.code()
	s.record(rec)
}

// record appends rec to the log and writes its JSON line.
func (s *Server) record(rec *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, *rec)
	if s.opts.Log == nil {
		return
	}
	line, err := marshal(rec)
	if err != nil {
		return
	}
	// A failing log must not fail the model; the in-memory log still has it.
	_, _ = s.opts.Log.Write(append(line, '\n'))
}

// readBody reads the capped request body; on failure it has answered.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, rec *Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	rec.BodyBytes = len(body)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			s.fail(w, rec, http.StatusRequestEntityTooLarge, fmt.Errorf("request body over %d bytes", maxBody))
		} else {
			s.fail(w, rec, http.StatusBadRequest, fmt.Errorf("read request body: %w", err))
		}
		return nil, false
	}
	if s.opts.RecordBodies {
		rec.Body = s.scrub.scrub(string(body))
	}
	return body, true
}

// parseFunc turns a request body into an exchange.
type parseFunc func(body []byte) (exchange, error)

// writeFunc writes a decided reply in one wire protocol.
type writeFunc func(w http.ResponseWriter, rp reply) error

// reply is a decided turn plus what every protocol's envelope needs.
type reply struct {
	turn
	model    string
	stream   bool
	id       string // unique per response, for message and response ids
	created  int64  // Unix seconds
	inTokens int    // fake input token count
}

// converse reads and parses a model request, decides the turn and writes
// the reply; adjust, if not nil, fixes fields that come from the URL.
func (s *Server) converse(w http.ResponseWriter, r *http.Request, rec *Request, parse parseFunc, adjust func(*exchange), write writeFunc) {
	body, ok := s.readBody(w, r, rec)
	if !ok {
		return
	}
	ex, err := parse(body)
	if err != nil {
		s.fail(w, rec, http.StatusBadRequest, err)
		return
	}
	ex.size = len(body)
	if adjust != nil {
		adjust(&ex)
	}
	if ex.model == "" {
		ex.model = defaultModel
	}
	t := decide(s.opts.Script, ex)
	rec.Model, rec.Stream = s.scrub.scrub(ex.model), ex.stream
	rec.ShellTool = t.tool.name
	rec.ToolResults = s.scrub.scrubAll(ex.results)
	rec.Turn, rec.Command = t.kind.String(), t.command
	rp := reply{
		turn:     t,
		model:    ex.model,
		stream:   ex.stream,
		id:       fmt.Sprintf("mock_%d", rec.Seq),
		created:  rec.Time.Unix(),
		inTokens: tokens(ex.size),
	}
	if err := write(w, rp); err != nil {
		rec.Error = s.scrub.scrub(fmt.Sprintf("write response: %v", err))
	}
}

// tokens is a fake token count for n bytes.
func tokens(n int) int {
	return n/4 + 1
}

// fail answers with an error body in the endpoint's API family and records
// the error.
func (s *Server) fail(w http.ResponseWriter, rec *Request, status int, err error) {
	msg := s.scrub.scrub("mockmodel: " + err.Error())
	rec.Error = msg
	_ = writeJSON(w, status, errorBody(rec.API, status, msg))
}

// errorBody is an error in the shape each API family's clients parse.
func errorBody(api string, status int, msg string) any {
	switch api {
	case apiAnthropic:
		return object{"type": "error", "error": object{"type": anthropicErrorType(status), "message": msg}}
	case apiGemini:
		return object{"error": object{"code": status, "message": msg, "status": googleStatus(status)}}
	default:
		return object{"error": object{"message": msg, "type": openAIErrorType(status), "code": nil}}
	}
}

func anthropicErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	default:
		return "invalid_request_error"
	}
}

func googleStatus(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	default:
		return "INVALID_ARGUMENT"
	}
}

func openAIErrorType(status int) string {
	if status == http.StatusUnauthorized {
		return "authentication_error"
	}
	return "invalid_request_error"
}

// object is a JSON object under construction.
type object = map[string]any

// marshal is json.Marshal without HTML escaping, so commands such as
// "a && b" stay readable in replies and logs.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// writeJSON writes v as the whole response.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := marshal(v)
	if err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(append(b, '\n'))
	return err
}

// statusWriter remembers the response status for the log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (sw *statusWriter) WriteHeader(code int) {
	if sw.status == 0 {
		sw.status = code
	}
	sw.ResponseWriter.WriteHeader(code)
}

func (sw *statusWriter) Write(b []byte) (int, error) {
	if sw.status == 0 {
		sw.status = http.StatusOK
	}
	return sw.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the Flusher underneath.
func (sw *statusWriter) Unwrap() http.ResponseWriter {
	return sw.ResponseWriter
}

func (sw *statusWriter) code() int {
	if sw.status == 0 {
		return http.StatusOK
	}
	return sw.status
}

// sseStream writes server-sent events, flushing after each one so the
// harness sees every event at once (net/http then uses chunked encoding,
// which the harnesses need on kept-alive connections).
type sseStream struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

func startSSE(w http.ResponseWriter) *sseStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sseStream{w: w, rc: http.NewResponseController(w)}
}

// send writes one event: an "event:" line when name is set (Anthropic,
// Responses), then one "data:" line of JSON.
func (s *sseStream) send(name string, v any) {
	if s.err != nil {
		return
	}
	data, err := marshal(v)
	if err != nil {
		s.err = fmt.Errorf("encode event: %w", err)
		return
	}
	var b strings.Builder
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	s.write(b.String())
}

// done writes Chat Completions' terminating "data: [DONE]".
func (s *sseStream) done() {
	s.write("data: [DONE]\n\n")
}

func (s *sseStream) write(frame string) {
	if s.err != nil {
		return
	}
	if _, err := io.WriteString(s.w, frame); err != nil {
		s.err = err
		return
	}
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.err = err
	}
}
