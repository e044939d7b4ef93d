package mockmodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// maxScript caps the size of a script read by LoadScript.
const maxScript = 1 << 20

// Script is what the mock model does in every conversation: one tool call
// per step, in order, then a final text answer.
//
// Its JSON form is
//
//	{"steps": [{"command": "echo hello"}, {"command": "ls -la"}], "final": "Done."}
type Script struct {
	// Steps are the shell commands the model asks the harness to run, one
	// tool call per turn.
	Steps []Step `json:"steps"`
	// Final is the text of the last turn. Empty means "Done.".
	Final string `json:"final"`
}

// Step is one model turn that calls the harness's shell tool.
type Step struct {
	// Command is the shell command line, e.g. "touch out.txt".
	Command string `json:"command"`
}

// DefaultScript is a short harmless demo: it shows where the agent runs,
// writes a file in the working directory and reads it back.
var DefaultScript = Script{
	Steps: []Step{
		{Command: "pwd && id"},
		{Command: "echo 'hello from a warden sandbox' > warden-demo.txt && cat warden-demo.txt"},
		{Command: "ls -la"},
	},
	Final: "Demo finished: ran 3 commands in the sandbox.",
}

// LoadScript decodes a JSON script strictly (unknown fields and trailing
// data are errors) and validates it.
func LoadScript(r io.Reader) (Script, error) {
	dec := json.NewDecoder(io.LimitReader(r, maxScript))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return Script{}, fmt.Errorf("mockmodel: decode script: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Script{}, errors.New("mockmodel: decode script: trailing data after the script object")
	}
	if err := s.Validate(); err != nil {
		return Script{}, err
	}
	return s, nil
}

// Validate reports whether every step has a command.
func (s Script) Validate() error {
	for i, st := range s.Steps {
		if st.Command == "" {
			return fmt.Errorf("mockmodel: script step %d: empty command", i)
		}
	}
	return nil
}

// final is the final text, with the default filled in.
func (s Script) final() string {
	if s.Final == "" {
		return "Done."
	}
	return s.Final
}
