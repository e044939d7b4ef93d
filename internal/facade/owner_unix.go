//go:build unix

package facade

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

func checkOwner(fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("no owner information")
	}
	if int(st.Uid) != os.Geteuid() {
		return errors.New("not owned by us")
	}
	return nil
}
