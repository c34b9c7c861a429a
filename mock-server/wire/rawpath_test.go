package wire

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRouteRaw: dot segments reach a parameter instead of being cleaned, an
// empty inner segment fits nothing, the catch-all tail is kept whole, and the
// "/" fallback is no match.
func TestRouteRaw(t *testing.T) {
	mux := http.NewServeMux()
	var got string
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) { got = "id=" + r.PathValue("id") })
	mux.HandleFunc("/proxy/{port}/{rest...}", func(w http.ResponseWriter, r *http.Request) { got = "rest=" + r.PathValue("rest") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { got = "fallback" })

	cases := []struct {
		path   string
		tailAt int
		ok     bool
		want   string
	}{
		{"/items/abc", -1, true, "id=abc"},
		{"/items/..", -1, true, "id=.."},
		{"/items/.", -1, true, "id=."},
		{"//items/abc", -1, false, ""},
		{"/items//abc", -1, false, ""},
		{"/nothing", -1, false, ""},
		{"/proxy/80/a/../b//c", len("/proxy/80/"), true, "rest=a/../b//c"},
		{"/proxy/80/../x", len("/proxy/80/"), true, "rest=../x"},
	}
	for _, c := range cases {
		got = ""
		r := httptest.NewRequest("GET", "/", nil)
		r2, ok := RouteRaw(mux, r, c.path, c.tailAt)
		if ok != c.ok {
			t.Errorf("%s: matched %v, want %v", c.path, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		mux.ServeHTTP(httptest.NewRecorder(), r2)
		if got != c.want {
			t.Errorf("%s: handler saw %q, want %q", c.path, got, c.want)
		}
	}
}
