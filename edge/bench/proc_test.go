package main

import (
	"errors"
	"os"
	"testing"

	"github.com/bowline-iot/bowline/internal/testkit"
)

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    memory
		wantErr error
	}{
		{
			name: "kernel 6 status",
			doc: "Name:\tbowline-edge\nVmPeak:\t 1263420 kB\nVmHWM:\t   26112 kB\nVmRSS:\t   25484 kB\n" +
				"RssAnon:\t    7436 kB\nRssFile:\t   18048 kB\nRssShmem:\t       0 kB\nThreads:\t8\n",
			want: memory{VmRSS: 25484, RssAnon: 7436, RssFile: 18048, VmHWM: 26112},
		},
		{name: "no memory lines (a kernel thread)", doc: "Name:\tkthreadd\nThreads:\t1\n", wantErr: errNoProc},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatus(tt.doc)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("parseStatus error = %v; want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseStatus = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	if _, err := parseStatus("VmRSS:\tlots kB\n"); err == nil {
		t.Fatal("parseStatus of a non-number = nil error; want one naming the line")
	}
}

func TestReadMemorySelf(t *testing.T) {
	_, err := os.Stat("/proc/self/status")
	testkit.Need(t, err) // no /proc: fails under CI=true, skips elsewhere
	m, err := readMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.VmRSS <= 0 || m.RssAnon+m.RssFile+m.RssShmem != m.VmRSS {
		t.Fatalf("readMemory(self) = %+v; want VmRSS > 0 = RssAnon + RssFile + RssShmem", m)
	}
}
