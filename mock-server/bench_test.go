package mockserver

import (
	"net/http"
	"testing"
)

// BenchmarkCreateReadyDelete measures create → execd /ping answered → delete
// through the lifecycle API on the real Linux runtime.
func BenchmarkCreateReadyDelete(b *testing.B) {
	srv, _ := realEnv(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		status, m := apiDo(b, srv, "POST", "/v1/sandboxes", validCreate())
		if status != http.StatusAccepted {
			b.Fatalf("create: %d %v", status, m)
		}
		id := m["id"].(string)
		_, ep := apiDo(b, srv, "GET", "/v1/sandboxes/"+id+"/endpoints/44772", nil)
		res, err := http.Get("http://" + ep["endpoint"].(string) + "/ping")
		if err != nil || res.StatusCode != http.StatusOK {
			b.Fatalf("ping: %v", err)
		}
		res.Body.Close()
		if status, _ := apiDo(b, srv, "DELETE", "/v1/sandboxes/"+id, nil); status != http.StatusNoContent {
			b.Fatalf("delete: %d", status)
		}
	}
}

// BenchmarkExecRoundTrip measures one `echo` command through the audited
// execd endpoint (SSE parsed on the way) on the real runtime.
func BenchmarkExecRoundTrip(b *testing.B) {
	srv, _ := realEnv(b)
	_, base := createSandbox(b, srv, validCreate())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, code := runCommand(b, base, "echo x")
		if code == nil || *code != 0 || len(out) != 1 {
			b.Fatalf("echo: %v %v", out, code)
		}
	}
}

// BenchmarkLifecycleGet measures the API layer alone (fake runtime).
func BenchmarkLifecycleGet(b *testing.B) {
	rt := &fakeRuntime{}
	srv, err := New(Config{APIKey: testKey, Runtime: rt})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL()+"/v1/sandboxes?pageSize=200", nil)
	req.Header.Set(headerAPIKey, testKey)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != 200 {
			b.Fatal(err)
		}
		res.Body.Close()
	}
}
