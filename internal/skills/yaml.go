package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// maxYAMLBytes bounds the frontmatter and manifest sizes.
const maxYAMLBytes = 256 << 10

var yamlLineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// decodeStrict decodes one YAML document into v with unknown keys as
// errors, and returns the node tree for line lookups. lineOff is added to
// every line number (the frontmatter starts after the opening ---).
func decodeStrict(file string, data []byte, lineOff int, v any) (*yaml.Node, error) {
	if len(data) > maxYAMLBytes {
		return nil, &ParseError{File: file, Msg: fmt.Sprintf("larger than %d bytes", maxYAMLBytes)}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlErrors(file, lineOff, err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, &ParseError{File: file, Line: lineOff + 1, Msg: "empty document"}
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return nil, &ParseError{File: file, Line: doc.Line + lineOff, Msg: "top level must be a mapping"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return nil, yamlErrors(file, lineOff, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := extra.Line
		if err != nil {
			return nil, yamlErrors(file, lineOff, err)
		}
		return nil, &ParseError{File: file, Line: line + lineOff, Msg: "more than one YAML document"}
	}
	return doc, nil
}

func yamlErrors(file string, lineOff int, err error) error {
	if te, ok := errors.AsType[*yaml.TypeError](err); ok {
		var es ParseErrors
		for _, msg := range te.Errors {
			es = append(es, lineError(file, lineOff, msg))
		}
		return es
	}
	return lineError(file, lineOff, err.Error())
}

func lineError(file string, lineOff int, msg string) *ParseError {
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &ParseError{File: file, Line: n + lineOff, Msg: m[2]}
	}
	return &ParseError{File: file, Msg: trimYAMLPrefix(msg)}
}

func trimYAMLPrefix(s string) string {
	const p = "yaml: "
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// lineOf returns the line of the node at path (string keys and int
// indexes), or of the deepest ancestor found. For a map key it is the
// key's line.
func lineOf(n *yaml.Node, path ...any) int {
	line := 0
	if n != nil {
		line = n.Line
	}
	for _, p := range path {
		if n == nil {
			break
		}
		switch p := p.(type) {
		case string:
			if n.Kind != yaml.MappingNode {
				return line
			}
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					line = n.Content[i].Line
					next = n.Content[i+1]
					break
				}
			}
			if next == nil {
				return line
			}
			n = next
		case int:
			if n.Kind != yaml.SequenceNode || p >= len(n.Content) {
				return line
			}
			n = n.Content[p]
			line = n.Line
		}
	}
	return line
}
