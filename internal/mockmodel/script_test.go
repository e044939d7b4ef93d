package mockmodel

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadScript(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    Script
		wantErr string
	}{
		{
			name: "full", in: `{"steps":[{"command":"touch a"},{"command":"ls"}],"final":"bye"}`,
			want: Script{Steps: []Step{{Command: "touch a"}, {Command: "ls"}}, Final: "bye"},
		},
		{name: "final only", in: `{"final":"just text"}`, want: Script{Final: "just text"}},
		{name: "trailing whitespace", in: "{\"steps\":[]}\n\n", want: Script{Steps: []Step{}}},
		{name: "unknown field", in: `{"steps":[],"finale":"x"}`, wantErr: "unknown field"},
		{name: "unknown step field", in: `{"steps":[{"cmd":"ls"}]}`, wantErr: "unknown field"},
		{name: "empty command", in: `{"steps":[{"command":"ls"},{"command":""}]}`, wantErr: "step 1: empty command"},
		{name: "trailing data", in: `{"steps":[]} {}`, wantErr: "trailing data"},
		{name: "not JSON", in: `steps: []`, wantErr: "decode script"},
		{name: "empty input", in: ``, wantErr: "decode script"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := LoadScript(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadScript error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadScript: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("LoadScript (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultScriptValid(t *testing.T) {
	t.Parallel()
	if err := DefaultScript.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(DefaultScript.Steps) == 0 || DefaultScript.Final == "" {
		t.Fatalf("DefaultScript is empty: %+v", DefaultScript)
	}
}
