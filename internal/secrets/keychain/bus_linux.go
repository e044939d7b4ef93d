//go:build linux

package keychain

import (
	"errors"
	"fmt"
	"os"
)

// sessionBusCheck fails fast when there is no D-Bus session bus. Without
// it, godbus would try to spawn one with dbus-launch.
func sessionBusCheck() error {
	if a := os.Getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" && a != "autolaunch:" {
		return nil
	}
	if _, err := os.Stat(fmt.Sprintf("/run/user/%d/bus", os.Getuid())); err == nil {
		return nil
	}
	return errors.New("no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is unset)")
}
