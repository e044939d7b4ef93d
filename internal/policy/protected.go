package policy

import (
	"path"
	"strings"
)

// Built-in protection lists. They are data, shown by `warden policy show`
// and covered by threats.md classes A and B.

// protectedInRoots are paths, relative to every writable root, that the
// sandbox may read but never create, modify, rename or delete: files that
// the host later executes or loads as configuration (threats A1–A3, A5, A7).
// A trailing slash marks a directory.
var protectedInRoots = []string{
	".git/hooks/",
	".git/config",
	".claude/",
	".codex/",
	".gemini/",
	".opencode/",
	".agents/",
	".mcp.json",
	".vscode/",
	".idea/",
	".envrc",
	".warden/",
}

// protectedIfPresent are, like protectedInRoots, read-only in every writable
// root, but only when they exist: tool configuration that can run code on
// the host (mise and asdf tool versions, npm and yarn scripts and shells,
// submodule URLs), where blocking first creation too would cost a mount
// point per name in every project for little gain.
var protectedIfPresent = []string{
	".gitmodules", ".tool-versions", ".mise.toml", "mise.toml", ".npmrc", ".yarnrc", ".yarnrc.yml",
	".ripgreprc", ".pnpmfile.cjs", ".devcontainer/",
}

// protectedInHome are paths, relative to $HOME, protected whenever $HOME (or
// an ancestor) is writable: shell startup files and global tool configuration
// (threats A4, A6).
var protectedInHome = []string{
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
	".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout",
	".kshrc", ".mkshrc", ".cshrc", ".tcshrc", ".inputrc",
	".config/fish/", ".config/nushell/", ".config/environment.d/",
	".config/autostart/", ".config/systemd/",
	".gitconfig", ".config/git/",
	".ssh/",
	".pam_environment",
	".local/bin/",
	".config/opencode/", ".claude.json", ".config/warden/",
}

// secretsInHome are paths, relative to $HOME, that are never readable.
var secretsInHome = []string{
	".ssh/", ".gnupg/", ".aws/", ".azure/", ".config/gcloud/", ".kube/", ".docker/",
	".git-credentials", ".netrc", ".pypirc", ".vault-token", ".pki/", ".terraform.d/",
	".config/op/", ".op/", ".password-store/", ".local/share/keyrings/",
	".config/gh/", ".config/hub", ".cargo/credentials", ".cargo/credentials.toml",
	".gem/credentials", ".m2/settings-security.xml", ".config/rclone/",
	".mozilla/", ".config/google-chrome/", ".config/chromium/", ".config/BraveSoftware/",
	".config/microsoft-edge/", ".thunderbird/",
	".bash_history", ".zsh_history", ".python_history", ".node_repl_history",
	".psql_history", ".mysql_history", ".lesshst", ".viminfo",
	".config/warden/", ".local/state/warden/", ".local/share/warden/",
	".env",
}

// secretsSystem are absolute paths that are never readable.
var secretsSystem = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/sudoers", "/etc/sudoers.d/", "/etc/security/opasswd",
	"/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key", "/etc/ssh/ssh_host_ed25519_key",
	"/etc/ssh/ssh_host_dsa_key", "/etc/ssl/private/", "/etc/docker/", "/etc/kubernetes/",
	"/etc/NetworkManager/system-connections/", "/etc/wpa_supplicant/", "/etc/krb5.keytab",
}

// systemReadDirs are readable in sandbox mode when they exist.
var systemReadDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix", "/snap"}

// dangerEnv are variables that are never passed into the sandbox, whatever
// the policy says: loader, interpreter and shell hooks that turn the
// environment into code, and agent sockets that lead out of the sandbox.
// A trailing '*' matches a prefix.
var dangerEnv = []string{
	"LD_*", "DYLD_*", "BASH_ENV", "ENV", "BASH_FUNC_*", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "PS4",
	"IFS", "CDPATH", "GLOBIGNORE",
	"NODE_OPTIONS", "NODE_PATH", "NODE_EXTRA_CA_CERTS_UNSAFE", "NPM_CONFIG_SCRIPT_SHELL",
	"PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONINSPECT", "PYTHONUSERBASE",
	"PERL5LIB", "PERL5OPT", "PERLLIB", "RUBYLIB", "RUBYOPT", "GEM_PATH",
	"JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
	"GOFLAGS", "GOENV", "CGO_*",
	"GIT_SSH", "GIT_SSH_COMMAND", "GIT_CONFIG*", "GIT_EXEC_PATH", "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR",
	"GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_TEMPLATE_DIR",
	"GIT_PROXY_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_TRACE*",
	"SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "GNUPGHOME",
	"DBUS_SESSION_BUS_ADDRESS", "DBUS_SYSTEM_BUS_ADDRESS", "XDG_RUNTIME_DIR", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY",
	"OP_SESSION_*", "OP_SERVICE_ACCOUNT_TOKEN", "OP_CONNECT_TOKEN", "SUDO_ASKPASS", "SSH_ASKPASS", "GIT_ASKPASS",
	"KUBECONFIG", "DOCKER_HOST", "DOCKER_CONFIG", "CONTAINER_HOST",
	"WARDEN_KEYRING_PASSPHRASE", "WARDEN_DEBUG_*",
	"MALLOC_*", "GLIBC_TUNABLES", "GCONV_PATH", "HOSTALIASES", "LOCALDOMAIN", "RES_OPTIONS",
}

// baseEnv are passed through by default when set on the host.
var baseEnv = []string{"PATH", "LANG", "LANGUAGE", "LC_*", "TERM", "COLORTERM", "TZ", "USER", "LOGNAME", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "COLUMNS", "LINES"}

// DefaultAllowHidden are workdir dotfiles that stay visible by default.
var DefaultAllowHidden = []string{
	".git", ".gitignore", ".gitattributes", ".gitmodules", ".github", ".gitlab", ".gitlab-ci.yml",
	".editorconfig", ".dockerignore", ".npmignore", ".prettierrc*", ".prettierignore", ".eslintrc*",
	".eslintignore", ".golangci.yml", ".golangci.yaml", ".nvmrc", ".node-version", ".python-version",
	".ruby-version", ".tool-versions", ".ci", ".circleci", ".devcontainer", ".husky", ".cargo",
	".clang-format", ".clang-tidy", ".pre-commit-config.yaml", ".markdownlint*", ".yamllint*",
	".vscode", ".idea", ".claude", ".codex", ".gemini", ".opencode", ".agents", ".mcp.json",
	".mise.toml", ".npmrc", ".yarnrc", ".yarnrc.yml", ".ripgreprc", ".warden", ".changeset", ".storybook",
	".config", ".vale.ini",
	".venv", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis", ".ipynb_checkpoints",
	".next", ".nuxt", ".turbo", ".parcel-cache", ".svelte-kit", ".angular", ".expo", ".vercel", ".output",
	".gradle", ".mvn", ".dart_tool", ".stack-work", ".bundle", ".yarn", ".pnpm-store", ".cache", ".eslintcache", ".stylelintrc*", ".browserslistrc", ".babelrc", ".swcrc", ".terraform-version",
}

// DangerEnv reports whether name is on the built-in danger blocklist.
func DangerEnv(name string) (bool, string) {
	return matchEnv(dangerEnv, name)
}

func matchEnv(patterns []string, name string) (bool, string) {
	for _, p := range patterns {
		if pre, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(name, pre) {
				return true, p
			}
		} else if p == name {
			return true, p
		}
	}
	return false, ""
}

// ProtectedInRoots returns the built-in list of paths protected in every
// writable root, first creation included (for display).
func ProtectedInRoots() []string { return append([]string(nil), protectedInRoots...) }

// ProtectedIfPresent returns the built-in list of paths protected in every
// writable root when they exist.
func ProtectedIfPresent() []string { return append([]string(nil), protectedIfPresent...) }

// ProtectedInHome returns the built-in list protected in a writable $HOME.
func ProtectedInHome() []string { return append([]string(nil), protectedInHome...) }

// SecretsInHome returns the built-in list of unreadable $HOME paths.
func SecretsInHome() []string { return append([]string(nil), secretsInHome...) }

// SecretsSystem returns the built-in list of unreadable system paths.
func SecretsSystem() []string { return append([]string(nil), secretsSystem...) }

// hiddenAllowed reports whether a workdir dotfile name stays visible.
func hiddenAllowed(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}
