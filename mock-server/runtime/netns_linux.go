//go:build linux

package runtime

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// netnsDir is where `ip netns` keeps named namespaces.
const netnsDir = "/run/netns"

// netnsName is the named network namespace of a sandbox.
func netnsName(id string) string {
	n := id
	if len(n) > 12 {
		n = n[:12]
	}
	return "osb-" + n
}

func runIP(ipPath string, args ...string) error {
	out, err := exec.Command(ipPath, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", ipPath, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// createNetns makes a loopback-only namespace where unprivileged programs may
// bind low ports (the egress sidecar binds 53/80/443 without capabilities).
func createNetns(ipPath, name string) error {
	if _, err := os.Stat(filepath.Join(netnsDir, name)); err == nil {
		if err := deleteNetns(ipPath, name); err != nil {
			return err
		}
	}
	if err := runIP(ipPath, "netns", "add", name); err != nil {
		return err
	}
	if err := runIP(ipPath, "-n", name, "link", "set", "lo", "up"); err != nil {
		_ = deleteNetns(ipPath, name)
		return err
	}
	if err := runIP(ipPath, "netns", "exec", name, "sysctl", "-qw", "net.ipv4.ip_unprivileged_port_start=0"); err != nil {
		_ = deleteNetns(ipPath, name)
		return err
	}
	return nil
}

// deleteNetns removes a named namespace; a missing one is not an error.
func deleteNetns(ipPath, name string) error {
	if _, err := os.Stat(filepath.Join(netnsDir, name)); os.IsNotExist(err) {
		return nil
	}
	return runIP(ipPath, "netns", "delete", name)
}
