package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/cli/cliutil"
	"github.com/wardenhq/warden/internal/launch"
	"github.com/wardenhq/warden/internal/secrets"
	"github.com/wardenhq/warden/internal/skills"
)

// NewCmdSkill builds `warden skill`.
func NewCmdSkill(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "skill <command>",
		Short: "Register, approve and list skills (SKILL.md + a sidecar manifest)",
		Long: `A skill is a directory with SKILL.md and an omac.yaml (or warden.yaml)
sidecar manifest. Registering records its bundle hash; approving freezes a
read-only snapshot in warden's state dir, and the sidecar only ever runs from
that snapshot: a changed bundle is refused until approved again. Secrets go
to the OS keychain, config values to the state dir — never to the project.`,
		Example: "  warden skill register ./examples/skills/echo --secrets-from echo.env --yes\n  warden run --skill echo -- sh",
	}
	cmd.AddCommand(newCmdSkillRegister(f), newCmdSkillList(f), newCmdSkillApprove(f), newCmdSkillDeregister(f))
	return cmd
}

// newCmdAliases are omac's top-level verbs.
func newCmdAliases(f *Factory) []*cobra.Command {
	var out []*cobra.Command
	for _, c := range []*cobra.Command{newCmdSkillRegister(f), newCmdSkillDeregister(f)} {
		c.Hidden = true
		out = append(out, c)
	}
	return out
}

type registerOptions struct {
	harness, secretsFrom, fieldsFrom string
	global, yes                      bool
}

func newCmdSkillRegister(f *Factory) *cobra.Command {
	o := &registerOptions{}
	cmd := &cobra.Command{
		Use:   "register NAME|DIR",
		Short: "Register a skill, store its secrets, and approve it (with --yes or at the prompt)",
		Example: "  warden skill register echo --harness opencode\n" +
			"  warden skill register ./skills/echo --secrets-from echo.env --fields-from echo.fields --yes",
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return skillRegister(f, o, args[0]) },
	}
	cmd.Flags().StringVar(&o.harness, "harness", skills.HarnessOpenCode, "harness whose skill dirs are searched, and that the skill is registered for")
	cmd.Flags().BoolVar(&o.global, "global", false, "look the name up in the user-global skill dirs only")
	cmd.Flags().StringVar(&o.secretsFrom, "secrets-from", "", "read secrets from `FILE` of KEY=VALUE lines")
	cmd.Flags().StringVar(&o.fieldsFrom, "fields-from", "", "read config fields from `FILE` of KEY=VALUE lines")
	cmd.Flags().BoolVar(&o.yes, "yes", false, "approve the bundle without asking")
	return cmd
}

func skillRegister(f *Factory, o *registerOptions, arg string) error {
	dir, scope, err := findSkill(arg, o.harness, o.global)
	if err != nil {
		return err
	}
	sk, err := skills.LoadSkill(dir)
	if err != nil {
		return cliutil.WithCode(cliutil.ExitConfigInvalid, err)
	}
	fields := map[string]string{}
	if o.fieldsFrom != "" {
		if fields, err = readKV(o.fieldsFrom); err != nil {
			return err
		}
	}
	reg, err := launch.OpenRegistry()
	if err != nil {
		return err
	}
	e, err := reg.Register(dir, o.harness, scope, fields)
	if err != nil {
		return cliutil.WithCode(cliutil.ExitConfigInvalid, err)
	}
	fmt.Fprintf(f.IO.ErrOut, "registered %s (mount /%s/) from %s\n  bundle %s\n", e.Name, e.Mount, e.SourceDir, e.BundleHash)
	if sk.Manifest.Sidecar != nil && len(sk.Manifest.Sidecar.Secrets) > 0 {
		if err := storeSkillSecrets(f, sk, o.secretsFrom); err != nil {
			return err
		}
	}
	if !o.yes {
		if !cliutil.IsTerminal(f.IO.In) {
			fmt.Fprintf(f.IO.ErrOut, "not approved: review %s, then run: warden skill approve %s\n", e.SourceDir, e.Name)
			return nil
		}
		fmt.Fprintf(f.IO.ErrOut, "approve bundle %s of %s? [y/N] ", e.BundleHash, e.Name)
		line, _ := bufio.NewReader(f.IO.In).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			fmt.Fprintf(f.IO.ErrOut, "not approved; run: warden skill approve %s\n", e.Name)
			return nil
		}
	}
	ap, err := reg.Approve(e.Name, e.BundleHash)
	if err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "approved %s; it runs from %s\n", e.Name, ap.SnapshotDir)
	return nil
}

// findSkill resolves a directory argument, or a name through the
// harness's discovery order.
func findSkill(arg, harness string, global bool) (string, skills.Scope, error) {
	if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
		abs, err := filepath.Abs(arg)
		if err != nil {
			return "", "", err
		}
		wd, _ := os.Getwd()
		if rel, err := filepath.Rel(wd, abs); err == nil && !strings.HasPrefix(rel, "..") {
			return abs, skills.ScopeWorkdir, nil
		}
		return abs, skills.ScopeUser, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	home, _ := os.UserHomeDir()
	if global {
		wd = ""
	}
	found, err := skills.Discover(wd, home, harness)
	if err != nil {
		return "", "", err
	}
	for _, fd := range found {
		if fd.Name == arg {
			return fd.Dir, fd.Root.Scope, nil
		}
	}
	return "", "", cliutil.FlagErrorf("no skill %q in the %s skill dirs (give its directory instead)", arg, harness)
}

func storeSkillSecrets(f *Factory, sk *skills.Skill, from string) error {
	vals := map[string]string{}
	if from != "" {
		var err error
		if vals, err = readKV(from); err != nil {
			return err
		}
	}
	store, err := openStore(f.IO.ErrOut)
	if err != nil {
		return err
	}
	svc := secrets.ServiceForSkill(sk.Manifest.Name)
	for _, spec := range sk.Manifest.Sidecar.Secrets {
		v, ok := vals[spec.Name]
		if !ok {
			v, ok = os.LookupEnv("WARDEN_SECRET_" + spec.Name)
		}
		if !ok {
			if _, err := store.Get(svc, spec.Name); err == nil {
				continue // already stored
			}
			if spec.IsRequired() {
				fmt.Fprintf(f.IO.ErrOut, "secret %s is required and not set: warden secret set %s %s\n", spec.Name, sk.Manifest.Name, spec.Name)
			}
			continue
		}
		if err := storeSecret(f.IO.ErrOut, store, sk.Manifest.Name, spec.Name, secrets.NewString(v)); err != nil {
			return err
		}
	}
	return nil
}

// readKV reads KEY=VALUE lines; blank lines and # comments are skipped.
func readKV(path string) (map[string]string, error) {
	fh, err := os.Open(path) //nolint:gosec // G304: the file the user named
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return parseKV(path, fh)
}

// parseKV parses KEY=VALUE lines from r (at most 1 MiB); name is used in
// errors, which never quote a value.
func parseKV(path string, r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(io.LimitReader(r, 1<<20))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, cliutil.WithCode(cliutil.ExitConfigInvalid, fmt.Errorf("%s:%d: want KEY=VALUE", path, n))
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, sc.Err()
}

func newCmdSkillList(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List registered skills and whether their approved bundle still matches",
		Example: "  warden skill list\n  warden skill list --json",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			reg, err := launch.OpenRegistry()
			if err != nil {
				return err
			}
			entries, err := reg.List()
			if err != nil {
				return err
			}
			type row struct {
				skills.Entry
				State string `json:"state"`
			}
			var rows []row
			for _, e := range entries {
				state := "approved"
				if _, err := reg.Resolve(e.Name); err != nil {
					state = "refused: " + err.Error()
				}
				rows = append(rows, row{e, state})
			}
			if asJSON {
				return cliutil.PrintJSON(f.IO.Out, rows)
			}
			for _, r := range rows {
				fmt.Fprintf(f.IO.Out, "%-20s /%-16s %-12s %s\n", r.Name, r.Mount+"/", r.Harness, r.State)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newCmdSkillApprove(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "approve NAME",
		Short:   "Approve a registered skill's current bundle (freezes a new snapshot)",
		Example: "  warden skill approve echo",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			reg, err := launch.OpenRegistry()
			if err != nil {
				return err
			}
			e, err := reg.Get(args[0])
			if err != nil {
				return err
			}
			hash, err := skills.BundleHash(e.SourceDir)
			if err != nil {
				return err
			}
			ap, err := reg.Approve(e.Name, hash)
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "approved %s at %s; it runs from %s\n", e.Name, hash, ap.SnapshotDir)
			return nil
		},
	}
}

func newCmdSkillDeregister(f *Factory) *cobra.Command {
	var purge bool
	cmd := &cobra.Command{
		Use:     "deregister NAME",
		Short:   "Forget a skill and its approvals (and, with --purge-secrets, its secrets)",
		Example: "  warden skill deregister echo --purge-secrets",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			reg, err := launch.OpenRegistry()
			if err != nil {
				return err
			}
			e, err := reg.Get(args[0])
			if err != nil {
				return err
			}
			if err := reg.Deregister(args[0]); err != nil {
				return err
			}
			if purge {
				store, err := openStore(f.IO.ErrOut)
				if err != nil {
					return err
				}
				for _, n := range e.Secrets {
					if err := store.Delete(secrets.ServiceForSkill(e.Name), n); err != nil && !errors.Is(err, secrets.ErrNotFound) {
						return cliutil.WithCode(exitKeychain, err)
					}
				}
			}
			fmt.Fprintf(f.IO.ErrOut, "deregistered %s\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&purge, "purge-secrets", false, "also delete the skill's secrets from the keychain")
	return cmd
}
