package dockertarget

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// engineOrSkip connects to the project's engine; without one the test is
// skipped with the reason (OSB_DOCKER_REQUIRED=1 turns that into a failure).
func engineOrSkip(t *testing.T) *dockertest.Pool {
	t.Helper()
	pool, err := Connect(context.Background(), Endpoint())
	if err == nil {
		_, err = pool.Client.InspectImage(SandboxImageURI)
		if err != nil {
			err = fmt.Errorf("the sandbox image %s is not built yet (acceptance run --target docker builds it): %w", SandboxImageURI, err)
		}
	}
	if err != nil {
		if os.Getenv("OSB_DOCKER_REQUIRED") == "1" {
			t.Fatalf("docker engine required: %v", err)
		}
		t.Skipf("not measured: %v (start it with `make docker-engine`)", err)
	}
	return pool
}

// hostAddrs are the host's own non-loopback IPv4 addresses (outside the
// engine's bridge): sending to them never leaves the machine.
func hostAddrs(t *testing.T, bridge string) []string {
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagLoopback != 0 || ifc.Name == bridge {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
				out = append(out, ipn.IP.String())
			}
		}
	}
	return out
}

// probeScript runs inside the container: it prints the routing table and
// tries (3 s each) to connect to every address:port given; all must fail.
const probeScript = `
import json, socket, sys
routes = open("/proc/net/route").read().splitlines()[1:]
res = {"routes": routes, "connects": {}}
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    s = socket.socket(); s.settimeout(3)
    try:
        s.connect((host, int(port))); res["connects"][target] = "connected"
    except Exception as e:
        res["connects"][target] = type(e).__name__ + ": " + str(e)
    finally:
        s.close()
print(json.dumps(res))
`

// TestContainerCannotReachHostNetwork proves that a container on the
// project's engine cannot reach a non-loopback address of the host: the host
// listens on all addresses, and a container's connects to the host's own
// interface addresses (and the bridge's gateway) fail. Every address tried is
// the host's own, so nothing leaves the machine even if this check failed.
func TestContainerCannotReachHostNetwork(t *testing.T) {
	pool := engineOrSkip(t)
	bridge := envOr("OSB_DOCKER_BRIDGE", "osbacc0")
	gw := strings.Split(envOr("OSB_DOCKER_BRIDGE_CIDR", "10.213.47.1/24"), "/")[0]

	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	addrs := hostAddrs(t, bridge)
	if len(addrs) == 0 {
		t.Skip("not measured: the host has no non-loopback IPv4 address to probe")
	}
	targets := []string{gw + ":" + port}
	for _, a := range addrs {
		targets = append(targets, a+":"+port)
	}
	repo, tag := splitRef(SandboxImageURI)
	res, err := pool.RunWithOptions(&dockertest.RunOptions{
		Repository: repo, Tag: tag, Name: "osb-netsafety-" + randHex(4),
		Entrypoint: []string{"python3", "-c", probeScript},
		Cmd:        targets,
		Labels:     map[string]string{"org.osb-acceptance.test": "netsafety"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pool.Purge(res) }()
	code, err := pool.Client.WaitContainerWithContext(res.Container.ID, contextWithTimeout(t, 60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	_ = pool.Client.Logs(dc.LogsOptions{Container: res.Container.ID, OutputStream: &stdout, ErrorStream: &stderr, Stdout: true, Stderr: true})
	if code != 0 {
		t.Fatalf("probe exited %d: %s %s", code, stdout.String(), stderr.String())
	}
	var got struct {
		Routes   []string          `json:"routes"`
		Connects map[string]string `json:"connects"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &got); err != nil {
		t.Fatalf("probe output %q: %v", stdout.String(), err)
	}
	t.Logf("container routes: %v", got.Routes)
	for _, tg := range targets {
		r := got.Connects[tg]
		t.Logf("connect %s from the container: %s", tg, r)
		if r == "connected" || r == "" {
			t.Errorf("a container reached the host at %s (%q)", tg, r)
		}
	}
	// Only the bridge's subnet and a default route through its gateway.
	gwHex := leHex(net.ParseIP(gw))
	for _, r := range got.Routes {
		f := strings.Fields(r)
		if len(f) < 3 {
			continue
		}
		if f[0] != "eth0" {
			t.Errorf("unexpected container interface in route %q", r)
		}
		if f[2] != "00000000" && f[2] != gwHex {
			t.Errorf("a container route goes through %s, not the bridge gateway %s (%s): %q", f[2], gw, gwHex, r)
		}
	}
	assertHostRules(t, bridge)
}

// assertHostRules checks the host side: forwarding off the bridge dropped,
// no masquerade for it, and IP forwarding off.
func assertHostRules(t *testing.T, bridge string) {
	out, err := exec.Command("iptables", "-w", "-S", "FORWARD").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables -S FORWARD: %v %s", err, out)
	}
	for _, want := range []string{"-i " + bridge, "-o " + bridge} {
		if !strings.Contains(string(out), want) || !strings.Contains(string(out), "-j DROP") {
			t.Errorf("FORWARD has no DROP rule for %s: %s", want, out)
		}
	}
	nat, _ := exec.Command("iptables", "-w", "-t", "nat", "-S").CombinedOutput()
	if strings.Contains(string(nat), "MASQUERADE") && strings.Contains(string(nat), bridge) {
		t.Errorf("a MASQUERADE rule mentions %s: %s", bridge, nat)
	}
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); err == nil && strings.TrimSpace(string(b)) != "0" {
		t.Logf("note: net.ipv4.ip_forward is %s on this host (set by something else); the FORWARD DROP rules still hold", strings.TrimSpace(string(b)))
	}
}

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

func contextWithTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// leHex is an IPv4 address as /proc/net/route prints it (little-endian hex).
func leHex(ip net.IP) string {
	v4 := ip.To4()
	if v4 == nil {
		return ""
	}
	return fmt.Sprintf("%02X%02X%02X%02X", v4[3], v4[2], v4[1], v4[0])
}
