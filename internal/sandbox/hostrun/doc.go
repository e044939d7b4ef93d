// Package hostrun runs the target without namespaces: the landlock backend
// (Landlock and seccomp alone, for machines where user namespaces are
// unavailable) and the explicit, loudly reported none backend.
package hostrun
