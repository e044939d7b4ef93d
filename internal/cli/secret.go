package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/wardenhq/warden/internal/cli/cliutil"
	"github.com/wardenhq/warden/internal/secrets"
	"github.com/wardenhq/warden/internal/secrets/keychain"
)

// Exit codes of the secret commands (docs/exit-codes.md).
const (
	exitKeychain      = 8
	exitSecretMissing = 9
)

var scopeRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// NewCmdSecret builds `warden secret`.
func NewCmdSecret(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secret <command>",
		Short: "Store secrets for skills and egress credentials in the OS keychain",
		Long: `Secrets live in the OS keychain (Secret Service, macOS Keychain, Windows
Credential Manager) or, on headless Linux, an encrypted file
(WARDEN_KEYRING_BACKEND=secret-service|keychain|wincred|file; the file
backend's key comes from a key file named by WARDEN_KEYRING_KEYFILE — see
"warden secret keyfile" — or from a passphrase, WARDEN_KEYRING_PASSPHRASE
when no terminal can ask). A SCOPE is a skill's name, or "net" for network.credentials.
Values are never printed: only a sha256 fingerprint.`,
		Example: "  printf %s \"$KEY\" | warden secret set net anthropic-api-key\n  warden secret list net",
	}
	cmd.AddCommand(newCmdSecretSet(f), newCmdSecretList(f), newCmdSecretUnset(f), newCmdSecretImport(f), newCmdSecretKeyfile(f))
	return cmd
}

func openStore(errOut io.Writer) (secrets.Store, error) {
	o, err := keychain.Open(keychain.Config{})
	if err != nil {
		return nil, cliutil.WithCode(exitKeychain, err)
	}
	if o.Warning != "" {
		fmt.Fprintf(errOut, "warden: warning: %s\n", o.Warning)
	}
	return o.Store, nil
}

// storeSecret stores s as scope/name and reports its fingerprint, never
// its value.
func storeSecret(errOut io.Writer, store secrets.Store, scope, name string, s secrets.Secret) error {
	if err := store.Set(secrets.ServiceForSkill(scope), name, s); err != nil {
		return cliutil.WithCode(exitKeychain, err)
	}
	fmt.Fprintf(errOut, "stored %s/%s in %s (fingerprint %s)\n", scope, name, store.Name(), s.Fingerprint())
	return nil
}

func checkScope(scope string) error {
	if !scopeRE.MatchString(scope) {
		return cliutil.FlagErrorf("invalid scope %q (a skill name, or net)", scope)
	}
	return nil
}

func newCmdSecretSet(f *Factory) *cobra.Command {
	var fromFile string
	cmd := &cobra.Command{
		Use:   "set SCOPE NAME",
		Short: "Store a secret (from --from-file, standard input, or a masked prompt)",
		Example: "  warden secret set net github-token --from-file ~/.config/gh/token\n" +
			"  printf %s \"$TOKEN\" | warden secret set echo ECHO_TOKEN",
		Args: cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := checkScope(args[0]); err != nil {
				return err
			}
			val, err := readSecret(f.IO, fromFile, args[0]+"/"+args[1])
			if err != nil {
				return err
			}
			if len(val) == 0 {
				return cliutil.FlagErrorf("empty secret")
			}
			store, err := openStore(f.IO.ErrOut)
			if err != nil {
				return err
			}
			s := secrets.New(val)
			clear(val)
			return storeSecret(f.IO.ErrOut, store, args[0], args[1], s)
		},
	}
	cmd.Flags().StringVar(&fromFile, "from-file", "", "read the value from `FILE` (one trailing newline is dropped)")
	return cmd
}

func readSecret(io *cliutil.IOStreams, fromFile, label string) ([]byte, error) {
	var b []byte
	var err error
	switch {
	case fromFile != "":
		b, err = os.ReadFile(fromFile) //nolint:gosec // G304: the file the user named
	case cliutil.IsTerminal(io.In):
		fmt.Fprintf(io.ErrOut, "value for %s (not shown): ", label)
		f, _ := io.In.(*os.File)
		b, err = term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(io.ErrOut)
	default:
		b, err = readAllLimited(io.In, 1<<20)
	}
	if err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r")), nil
}

func readAllLimited(r io.Reader, n int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, n+1))
	if err == nil && int64(len(b)) > n {
		return nil, errors.New("secret larger than 1 MiB")
	}
	return b, err
}

func newCmdSecretList(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list SCOPE",
		Short:   "List a scope's secrets with their fingerprints (never their values)",
		Example: "  warden secret list net\n  warden secret list echo --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := checkScope(args[0]); err != nil {
				return err
			}
			store, err := openStore(f.IO.ErrOut)
			if err != nil {
				return err
			}
			svc := secrets.ServiceForSkill(args[0])
			names, err := store.List(svc)
			if err != nil {
				return cliutil.WithCode(exitKeychain, err)
			}
			type entry struct{ Name, Fingerprint string }
			var out []entry
			for _, n := range names {
				s, err := store.Get(svc, n)
				if err != nil {
					continue
				}
				out = append(out, entry{n, s.Fingerprint()})
			}
			if asJSON {
				return cliutil.PrintJSON(f.IO.Out, out)
			}
			for _, e := range out {
				fmt.Fprintf(f.IO.Out, "%s\t%s\n", e.Name, e.Fingerprint)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newCmdSecretUnset(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "unset SCOPE NAME",
		Short:   "Delete a secret",
		Example: "  warden secret unset net github-token",
		Args:    cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := checkScope(args[0]); err != nil {
				return err
			}
			store, err := openStore(f.IO.ErrOut)
			if err != nil {
				return err
			}
			err = store.Delete(secrets.ServiceForSkill(args[0]), args[1])
			switch {
			case errors.Is(err, secrets.ErrNotFound):
				return cliutil.WithCode(exitSecretMissing, fmt.Errorf("no secret %s/%s", args[0], args[1]))
			case err != nil:
				return cliutil.WithCode(exitKeychain, err)
			}
			return nil
		},
	}
}

func newCmdSecretImport(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "import SCOPE FILE",
		Short:   "Store every KEY=VALUE line of FILE as a secret of SCOPE (\"-\" reads standard input)",
		Example: "  warden secret import echo echo.env\n  pass show team/echo | warden secret import echo -",
		Args:    cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := checkScope(args[0]); err != nil {
				return err
			}
			var vals map[string]string
			var err error
			if args[1] == "-" {
				vals, err = parseKV("stdin", f.IO.In)
			} else {
				vals, err = readKV(args[1])
			}
			if err != nil {
				return err
			}
			store, err := openStore(f.IO.ErrOut)
			if err != nil {
				return err
			}
			for _, k := range slices.Sorted(maps.Keys(vals)) {
				if err := storeSecret(f.IO.ErrOut, store, args[0], k, secrets.NewString(vals[k])); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func newCmdSecretKeyfile(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "keyfile PATH",
		Short: "Create a random key file for the encrypted-file secret store",
		Long: `Create PATH (0600, refused if it exists) holding a random 256-bit key for the
encrypted-file backend. With WARDEN_KEYRING_KEYFILE=PATH the store needs no
passphrase and no key derivation at each start (headless machines, CI).
Keep the file off the machine's backups and out of every sandbox (the
default policy hides ~/.config/warden). A store created with a passphrase
keeps needing it.`,
		Example: "  warden secret keyfile ~/.config/warden/keyring.key\n  export WARDEN_KEYRING_BACKEND=file WARDEN_KEYRING_KEYFILE=~/.config/warden/keyring.key",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := keychain.GenerateKeyFile(args[0]); err != nil {
				return cliutil.WithCode(cliutil.ExitFailure, err)
			}
			fmt.Fprintf(f.IO.ErrOut, "created %s; use it with WARDEN_KEYRING_BACKEND=file WARDEN_KEYRING_KEYFILE=%s\n", args[0], args[0])
			return nil
		},
	}
}
