package subject

import (
	"strings"
	"testing"
)

func TestModelEnvOnlyWithAModel(t *testing.T) {
	has := func(l []string, k string) bool {
		for _, kv := range l {
			if strings.HasPrefix(kv, k+"=") {
				return true
			}
		}
		return false
	}
	plain := Env{Domain: "127.0.0.1:1", APIKey: "k"}.List("/h")
	if has(plain, EnvModelBaseURL) || has(plain, EnvModelAPIKey) {
		t.Fatalf("a submission without a model got model variables: %v", plain)
	}
	agent := Env{Domain: "127.0.0.1:1", APIKey: "k", ModelBaseURL: "http://127.0.0.1:2/v1", ModelAPIKey: "sk-x"}.List("/h")
	if !has(agent, EnvModelBaseURL) || !has(agent, EnvModelAPIKey) {
		t.Fatalf("a submission with a model lacks OPENAI_BASE_URL/OPENAI_API_KEY: %v", agent)
	}
}
