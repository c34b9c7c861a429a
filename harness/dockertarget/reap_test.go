package dockertarget

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// uuid4 is a random sandbox id in the control plane's format.
func uuid4() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// TestReapCrashedRun leaves what a killed run leaves (its record, its control
// plane's log, a sandbox container that log names) beside a sandbox container
// of ANOTHER control plane created at the same time on the same engine (the
// case that removed a live run's sandbox mid-run: docs/docker.md) and a
// container of someone else, and checks that the reaper removes exactly the
// crashed run's own sandbox.
func TestReapCrashedRun(t *testing.T) {
	pool := engineOrSkip(t)
	dir := t.TempDir()
	endpoint := Endpoint()
	mine, theirs := uuid4(), uuid4()
	serverLog := filepath.Join(dir, "server.log")
	if err := os.WriteFile(serverLog, []byte("INFO: opensandbox_server.services.docker.docker_service: sandbox="+mine+" | action=create sandbox container | duration=12.57\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeRecord(dir, runRecord{Endpoint: endpoint, Started: time.Now().UTC(), ServerLog: serverLog}); err != nil {
		t.Fatal(err)
	}
	repo, tag := splitRef(SandboxImageURI)
	run := func(name string, labels map[string]string) *dockertest.Resource {
		r, err := pool.RunWithOptions(&dockertest.RunOptions{Repository: repo, Tag: tag, Name: name + "-" + randHex(4),
			Entrypoint: []string{"sleep", "300"}, Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pool.Purge(r) })
		return r
	}
	left := run("osb-reap-sandbox", map[string]string{labelSandboxID: mine})
	foreign := run("osb-reap-foreign", map[string]string{labelSandboxID: theirs})
	other := run("osb-reap-other", map[string]string{"org.osb-acceptance.test": "reap"})

	msg, err := reapCrashed(pool, dir, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(msg)
	if _, err := pool.Client.InspectContainer(left.Container.ID); err == nil {
		t.Error("the crashed run's sandbox container is still there")
	} else if _, ok := err.(*dc.NoSuchContainer); !ok {
		t.Errorf("inspect: %v", err)
	}
	if _, err := pool.Client.InspectContainer(foreign.Container.ID); err != nil {
		t.Errorf("another control plane's sandbox, created while the crashed run's record was there, was removed: %v", err)
	}
	if _, err := pool.Client.InspectContainer(other.Container.ID); err != nil {
		t.Errorf("a container the control plane did not create was removed: %v", err)
	}
	if _, err := os.Stat(recordPath(dir)); !os.IsNotExist(err) {
		t.Errorf("the crashed run's record is still there: %v", err)
	}
	// Nothing recorded: nothing to do.
	if msg, err := reapCrashed(pool, dir, endpoint); msg != "" || err != nil {
		t.Errorf("second reap: %q %v", msg, err)
	}
}
