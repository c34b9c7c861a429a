package agent

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestInterruptRightAfterInit: the command is registered as
// running before init is sent, so an interrupt sent as soon as init arrives
// always stops it (real execd: storeCommandKernel, then OnExecuteInit).
func TestInterruptRightAfterInit(t *testing.T) {
	_, srv, _ := testAgent(t)
	for i := 0; i < 50; i++ {
		res, err := http.Post(srv.URL+"/command", "application/json", strings.NewReader(`{"command":"sleep 30"}`))
		if err != nil {
			t.Fatal(err)
		}
		rd := bufio.NewReader(res.Body)
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		var ev event
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Type != "init" {
			t.Fatalf("first frame %q", line)
		}
		req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/command?id="+ev.Text, nil)
		ir, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		ir.Body.Close()
		if ir.StatusCode != http.StatusOK {
			t.Fatalf("try %d: interrupt right after init answered %d", i+1, ir.StatusCode)
		}
		deadline := time.AfterFunc(10*time.Second, func() { res.Body.Close() })
		var last event
		for {
			l, err := rd.ReadString('\n')
			if strings.TrimSpace(l) != "" {
				_ = json.Unmarshal([]byte(l), &last)
				if last.Type == "error" || last.Type == "execution_complete" {
					break
				}
			}
			if err != nil {
				break
			}
		}
		deadline.Stop()
		res.Body.Close()
		if last.Type != "error" || last.Error == nil || last.Error.Evalue != "-1" {
			t.Fatalf("try %d: the interrupted command ended with %+v", i+1, last)
		}
	}
}
