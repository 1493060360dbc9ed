package fakes_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/cloud/fakes"
)

func post(t *testing.T, url, key, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestFakeRecordsEveryCallAndDeduplicatesNothing(t *testing.T) {
	f, err := fakes.New(fakes.Shipping)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	for range 3 {
		if got := post(t, srv.URL+"/shipments", "e1:book_shipment", `{"order_id":"o1"}`); got != http.StatusCreated {
			t.Fatalf("POST /shipments = %d; want 201", got)
		}
	}
	if got := f.CountByKey()["e1:book_shipment"]; got != 3 {
		t.Errorf("calls with key e1:book_shipment = %d; want 3", got)
	}
	if got := post(t, srv.URL+"/shipments", "", `{}`); got != http.StatusBadRequest {
		t.Errorf("POST without key = %d; want 400", got)
	}
}

func TestFakeFailures(t *testing.T) {
	f, _ := fakes.New(fakes.Notify)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	url := srv.URL + "/notifications"

	// Told through the control API, as bowline dev scripts would.
	if got := post(t, srv.URL+"/_fake/fail", "", `{"times":2,"status":503}`); got != http.StatusNoContent {
		t.Fatalf("POST /_fake/fail = %d; want 204", got)
	}
	var got []int
	for range 3 {
		got = append(got, post(t, url, "k", `{}`))
	}
	if want := []int{503, 503, 202}; !equal(got, want) {
		t.Errorf("statuses after fail(2, 503) = %v; want %v", got, want)
	}
	f.FailAlways(500)
	got = got[:0]
	for range 3 {
		got = append(got, post(t, url, "k", `{}`))
	}
	if want := []int{500, 500, 500}; !equal(got, want) {
		t.Errorf("statuses after FailAlways(500) = %v; want %v", got, want)
	}
	if n := len(f.Calls()); n != 6 {
		t.Errorf("recorded calls = %d; want 6 (failures are recorded too)", n)
	}
	if n := len(f.Succeeded()); n != 1 {
		t.Errorf("succeeded calls = %d; want 1", n)
	}

	resp, err := http.Get(srv.URL + "/_fake/calls")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Kind  string       `json:"kind"`
		Calls []fakes.Call `json:"calls"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.Kind != fakes.Notify || len(doc.Calls) != 6 {
		t.Errorf("GET /_fake/calls = kind %q, %d calls; want %q, 6", doc.Kind, len(doc.Calls), fakes.Notify)
	}
	post(t, srv.URL+"/_fake/reset", "", "")
	if n := len(f.Calls()); n != 0 {
		t.Errorf("calls after reset = %d; want 0", n)
	}
	if got := post(t, url, "k", `{}`); got != http.StatusAccepted {
		t.Errorf("status after reset = %d; want 202", got)
	}
}

func TestNewRejectsUnknownKind(t *testing.T) {
	if _, err := fakes.New("stripe"); err == nil || !strings.Contains(err.Error(), "stripe") {
		t.Errorf("New(stripe) error = %v; want one naming stripe", err)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
