package subject

import (
	"os"
	"sort"
)

// Env names given to a subject (the submission contract).
const (
	EnvDomain       = "OPEN_SANDBOX_DOMAIN"
	EnvAPIKey       = "OPEN_SANDBOX_API_KEY"
	EnvDataAPIURL   = "CAPSTONE_DATA_API_URL"
	EnvDataAPIToken = "CAPSTONE_DATA_API_TOKEN"
	EnvRunID        = "CAPSTONE_RUN_ID"
	// A submission with a model in the loop (manifest model: true) also gets
	// the scripted model's endpoint, under the official OpenAI clients' names,
	// in every command (run, contract, reap, test.unit, test.integration).
	EnvModelBaseURL = "OPENAI_BASE_URL"
	EnvModelAPIKey  = "OPENAI_API_KEY"
)

// Env is everything a subject receives in its environment.
type Env struct {
	Domain       string // OPEN_SANDBOX_DOMAIN: host:port, no scheme
	APIKey       string // OPEN_SANDBOX_API_KEY
	DataAPIURL   string // CAPSTONE_DATA_API_URL
	DataAPIToken string // CAPSTONE_DATA_API_TOKEN
	RunID        string // CAPSTONE_RUN_ID
	// ModelBaseURL / ModelAPIKey: OPENAI_BASE_URL and OPENAI_API_KEY, set
	// only for a submission with a model in the loop (both empty otherwise).
	ModelBaseURL string
	ModelAPIKey  string
	// Path is PATH; empty means the harness's own PATH (or a minimal default).
	Path string
	// Lang is LANG; empty means the harness's LANG, else C.UTF-8.
	Lang string
}

// List returns the environment as KEY=VALUE pairs, sorted, with HOME set to
// home. Nothing from the harness's own environment is included except the
// defaults for PATH and LANG described on Env.
func (e Env) List(home string) []string {
	path := e.Path
	if path == "" {
		path = os.Getenv("PATH")
	}
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	lang := e.Lang
	if lang == "" {
		lang = os.Getenv("LANG")
	}
	if lang == "" {
		lang = "C.UTF-8"
	}
	m := map[string]string{
		EnvDomain: e.Domain, EnvAPIKey: e.APIKey, EnvDataAPIURL: e.DataAPIURL,
		EnvDataAPIToken: e.DataAPIToken, EnvRunID: e.RunID,
		"PATH": path, "HOME": home, "LANG": lang,
	}
	if e.ModelBaseURL != "" {
		m[EnvModelBaseURL] = e.ModelBaseURL
		m[EnvModelAPIKey] = e.ModelAPIKey
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
