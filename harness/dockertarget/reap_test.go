package dockertarget

import (
	"os"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// TestReapCrashedRun leaves what a killed run leaves (its record, a sandbox
// container labelled by the control plane, a container of someone else) and
// checks that the reaper removes exactly the first two.
func TestReapCrashedRun(t *testing.T) {
	pool := engineOrSkip(t)
	dir := t.TempDir()
	endpoint := Endpoint()
	if err := writeRecord(dir, runRecord{Endpoint: endpoint, Started: time.Now().UTC()}); err != nil {
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
	left := run("osb-reap-sandbox", map[string]string{labelSandboxID: "reap-test"})
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
