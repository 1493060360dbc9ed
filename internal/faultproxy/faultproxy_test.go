package faultproxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/internal/faultproxy"
)

func call(t *testing.T, url, target string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("{}"))
	req.Header.Set("X-Amz-Target", target)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Calls the rule picks get the fault as AWS would send it; the others
// reach the upstream; Heal forwards everything again.
func TestFaultsByOperation(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"upstream":true}`)
	}))
	defer upstream.Close()
	p := faultproxy.Start(t, upstream.URL)
	p.Fail(faultproxy.Ops("UpdateItem"), faultproxy.Throttling)
	if code, body := call(t, p.URL(), "DynamoDB_20120810.UpdateItem"); code != 400 || !strings.Contains(body, `"__type":"ProvisionedThroughputExceededException"`) {
		t.Errorf("UpdateItem = %d %s; want 400 ProvisionedThroughputExceededException", code, body)
	}
	if code, body := call(t, p.URL(), "DynamoDB_20120810.GetItem"); code != 200 || !strings.Contains(body, "upstream") {
		t.Errorf("GetItem = %d %s; want the upstream's answer", code, body)
	}
	p.Heal()
	if code, _ := call(t, p.URL(), "DynamoDB_20120810.UpdateItem"); code != 200 {
		t.Errorf("UpdateItem after Heal = %d; want 200", code)
	}
	if c, f := p.Calls("UpdateItem"), p.Faulted("UpdateItem"); c != 2 || f != 1 {
		t.Errorf("UpdateItem calls, faulted = %d, %d; want 2, 1", c, f)
	}
	// A rule sees each operation's call number.
	p.SetRule(func(op string, n int) (faultproxy.Fault, bool) { return faultproxy.InternalError, n%2 == 1 })
	if code, _ := call(t, p.URL(), "DynamoDB_20120810.PutItem"); code != 500 {
		t.Errorf("first PutItem = %d; want 500", code)
	}
	if code, _ := call(t, p.URL(), "DynamoDB_20120810.PutItem"); code != 200 {
		t.Errorf("second PutItem = %d; want 200", code)
	}
}
