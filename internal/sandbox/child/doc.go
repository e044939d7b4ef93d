// Package child is the part of warden that runs inside the sandbox: `init`
// stays PID 1 (reaps zombies, forwards signals) and starts `exec`, which
// applies the last irreversible restrictions and becomes the target.
package child
