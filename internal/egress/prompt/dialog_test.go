package prompt

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeDialog returns a Dialog for goos with the given tools in PATH and a
// Run that records argv and answers with code and out.
func fakeDialog(goos string, env map[string]string, tools []string, code int, out string, runErr error) (*Dialog, *[]string) {
	var argv []string
	return &Dialog{
		GOOS:   goos,
		Getenv: func(k string) string { return env[k] },
		LookPath: func(n string) (string, error) {
			if slices.Contains(tools, n) {
				return "/usr/bin/" + n, nil
			}
			return "", errors.New("not found")
		},
		Run: func(_ context.Context, a []string) (int, []byte, error) {
			argv = a
			return code, []byte(out), runErr
		},
	}, &argv
}

var x11 = map[string]string{"DISPLAY": ":0"}

func TestDialogZenity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		code    int
		out     string
		want    Answer
		wantErr string // "", "timeout" or "other"
	}{
		{"ok is once", 0, "", AnswerOnce, ""},
		{"always button", 1, "Always allow\n", AnswerAlways, ""},
		{"never button", 1, "Never (deny always)\n", AnswerNever, ""},
		{"site button", 1, "Always allow the whole site\n", AnswerSite, ""},
		{"cancel or closed", 1, "", AnswerDeny, ""},
		{"timeout", 5, "", AnswerDeny, "timeout"},
		{"error exit", -1, "", AnswerDeny, "other"},
		{"unknown button", 1, "Sure\n", AnswerDeny, "other"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, argv := fakeDialog("linux", x11, []string{"zenity", "kdialog"}, tc.code, tc.out, nil)
			a, err := d.Ask(t.Context(), "api.example.com", 8443)
			if a != tc.want {
				t.Errorf("answer %v, want %v", a, tc.want)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.wantErr == "timeout" && !errors.Is(err, ErrTimeout):
				t.Errorf("error %v, want ErrTimeout", err)
			case tc.wantErr == "other" && (err == nil || errors.Is(err, ErrTimeout)):
				t.Errorf("error %v, want a failure", err)
			}
			want := []string{
				"/usr/bin/zenity", "--question", "--title=warden", "--no-markup", "--no-wrap",
				"--text=warden: allow network access to api.example.com:8443? (site: example.com)", "--ok-label=Allow once", "--cancel-label=Deny",
				"--extra-button=Always allow", "--extra-button=Always allow the whole site", "--extra-button=Never (deny always)", "--timeout=60",
			}
			if !slices.Equal(*argv, want) {
				t.Errorf("argv\n got %q\nwant %q", *argv, want)
			}
		})
	}
}

func TestDialogKdialog(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code int
		out  string
		want Answer
		err  bool
	}{
		{0, "once\n", AnswerOnce, false},
		{0, "always\n", AnswerAlways, false},
		{0, "deny\n", AnswerDeny, false},
		{0, "never\n", AnswerNever, false},
		{1, "", AnswerDeny, false},
		{0, "bogus\n", AnswerDeny, true},
		{2, "", AnswerDeny, true},
	}
	for _, tc := range tests {
		d, argv := fakeDialog("linux", map[string]string{"WAYLAND_DISPLAY": "wayland-0"}, []string{"kdialog"}, tc.code, tc.out, nil)
		a, err := d.Ask(t.Context(), "::1", 443)
		if a != tc.want || (err != nil) != tc.err {
			t.Errorf("exit %d %q: %v, %v; want %v (error %v)", tc.code, tc.out, a, err, tc.want, tc.err)
		}
		if len(*argv) < 5 || (*argv)[0] != "/usr/bin/kdialog" || (*argv)[4] != "warden: allow network access to [::1]:443?" {
			t.Errorf("argv %q", *argv)
		}
	}
}

func TestDialogOsascript(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code int
		out  string
		want Answer
		err  bool
	}{
		{0, "Allow once\n", AnswerOnce, false},
		{0, "Always allow\n", AnswerAlways, false},
		{0, "Deny\n", AnswerDeny, false},
		{0, "Never (deny always)\n", AnswerNever, false},
		{0, "Always allow the whole site\n", AnswerSite, false},
		{0, "\n", AnswerDeny, false},
		{1, "", AnswerDeny, false},
		{0, "Whatever\n", AnswerDeny, true},
	}
	for _, tc := range tests {
		d, argv := fakeDialog("darwin", nil, []string{"osascript"}, tc.code, tc.out, nil)
		a, err := d.Ask(t.Context(), "xn--bcher-kva.example", 443)
		if a != tc.want || (err != nil) != tc.err {
			t.Errorf("exit %d %q: %v, %v; want %v (error %v)", tc.code, tc.out, a, err, tc.want, tc.err)
		}
		// The host is the script's argument, never part of its source.
		last := (*argv)[len(*argv)-1]
		if last != "warden: allow network access to xn--bcher-kva.example:443? (site: xn--bcher-kva.example)" {
			t.Errorf("argument %q", last)
		}
		for _, a := range (*argv)[:len(*argv)-1] {
			if strings.Contains(a, "xn--bcher") {
				t.Errorf("host in script source: %q", a)
			}
		}
	}
}

func TestDialogTool(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		goos  string
		env   map[string]string
		tools []string
		want  string // "" for ErrNoDialog
	}{
		{"zenity first", "linux", x11, []string{"zenity", "kdialog"}, "/usr/bin/zenity"},
		{"kdialog", "linux", x11, []string{"kdialog"}, "/usr/bin/kdialog"},
		{"wayland", "freebsd", map[string]string{"WAYLAND_DISPLAY": "w"}, []string{"zenity"}, "/usr/bin/zenity"},
		{"no display", "linux", nil, []string{"zenity"}, ""},
		{"no tool", "linux", x11, nil, ""},
		{"darwin ignores DISPLAY", "darwin", nil, []string{"osascript"}, "/usr/bin/osascript"},
		{"darwin without osascript", "darwin", x11, []string{"zenity"}, ""},
		{"windows", "windows", x11, []string{"zenity"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, _ := fakeDialog(tc.goos, tc.env, tc.tools, 0, "", nil)
			got, err := d.Tool()
			if got != tc.want || (tc.want == "") != errors.Is(err, ErrNoDialog) {
				t.Errorf("Tool() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestDialogFailures(t *testing.T) {
	t.Parallel()
	t.Run("run error", func(t *testing.T) {
		d, _ := fakeDialog("linux", x11, []string{"zenity"}, -1, "", errors.New("exec format error"))
		if a, err := d.Ask(t.Context(), "a.test", 443); err == nil || a != AnswerDeny {
			t.Errorf("Ask = %v, %v", a, err)
		}
	})
	t.Run("hung tool times out", func(t *testing.T) {
		d, _ := fakeDialog("linux", x11, []string{"kdialog"}, 0, "", nil)
		d.Timeout = time.Millisecond // the context allows 2s more
		d.Run = func(ctx context.Context, _ []string) (int, []byte, error) {
			<-ctx.Done()
			return -1, nil, ctx.Err()
		}
		if a, err := d.Ask(t.Context(), "a.test", 443); !errors.Is(err, ErrTimeout) || a != AnswerDeny {
			t.Errorf("Ask = %v, %v; want ErrTimeout", a, err)
		}
	})
	t.Run("bad host never runs", func(t *testing.T) {
		d, argv := fakeDialog("linux", x11, []string{"zenity"}, 0, "", nil)
		for _, h := range []string{"--help", "a.test\n--x", "A.test", "a\"b"} {
			if a, err := d.Ask(t.Context(), h, 443); err == nil || a != AnswerDeny {
				t.Errorf("%q: Ask = %v, %v", h, a, err)
			}
		}
		if *argv != nil {
			t.Errorf("ran %q", *argv)
		}
	})
}

// TestDialogNotifiesFirst: with notify-send present, a notification
// precedes the dialog, the text passed as data after "--".
func TestDialogNotifiesFirst(t *testing.T) {
	t.Parallel()
	var calls [][]string
	d := &Dialog{
		GOOS:   "linux",
		Getenv: func(k string) string { return x11[k] },
		LookPath: func(n string) (string, error) {
			if n == "zenity" || n == "notify-send" {
				return "/usr/bin/" + n, nil
			}
			return "", errors.New("not found")
		},
		Run: func(_ context.Context, a []string) (int, []byte, error) {
			calls = append(calls, a)
			return 0, nil, nil
		},
	}
	if a, err := d.Ask(t.Context(), "api.example.com", 443); err != nil || a != AnswerOnce {
		t.Fatalf("%v %v", a, err)
	}
	if len(calls) != 2 || calls[0][0] != "/usr/bin/notify-send" || calls[1][0] != "/usr/bin/zenity" {
		t.Fatalf("calls %q", calls)
	}
	n := calls[0]
	if n[len(n)-3] != "--" || !strings.Contains(n[len(n)-1], "api.example.com:443") {
		t.Errorf("notification argv %q", n)
	}
}

func TestDialogNotifyKdialogText(t *testing.T) {
	t.Parallel()
	var first []string
	d := &Dialog{
		GOOS: "linux", Getenv: func(k string) string { return x11[k] },
		LookPath: func(n string) (string, error) {
			if n == "kdialog" || n == "notify-send" {
				return "/usr/bin/" + n, nil
			}
			return "", errors.New("not found")
		},
		Run: func(_ context.Context, a []string) (int, []byte, error) {
			if first == nil {
				first = a
			}
			return 0, []byte("once\n"), nil
		},
	}
	if _, err := d.Ask(t.Context(), "api.example.com", 443); err != nil {
		t.Fatal(err)
	}
	if got := first[len(first)-1]; !strings.HasPrefix(got, "warden: allow network access to api.example.com:443?") {
		t.Errorf("notification text %q", got)
	}
}
