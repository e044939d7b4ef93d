package main
import (
 _ "github.com/spf13/cobra"
 _ "go.yaml.in/yaml/v3"
 _ "github.com/landlock-lsm/go-landlock/landlock"
 _ "golang.org/x/sys/unix"
 _ "golang.org/x/term"
 _ "github.com/google/go-cmp/cmp"
 _ "github.com/zalando/go-keyring"
 _ "golang.org/x/net/http2"
 _ "golang.org/x/crypto/chacha20poly1305"
)
func main(){}
