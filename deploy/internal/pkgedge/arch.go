package pkgedge

import (
	"fmt"
	"sort"
)

// Arch is a Debian architecture the gateway runs on and how Go builds for it.
type Arch struct {
	// Deb is the Debian architecture name (arm64, armhf).
	Deb string
	// GOARCH and GOARM select the Go target.
	GOARCH, GOARM string
	// nfpm is nfpm's name for the target.
	nfpm string
}

// Arches are the supported targets by Debian name.
var Arches = map[string]Arch{
	"arm64": {Deb: "arm64", GOARCH: "arm64", nfpm: "arm64"},
	"armhf": {Deb: "armhf", GOARCH: "arm", GOARM: "7", nfpm: "arm7"},
	"amd64": {Deb: "amd64", GOARCH: "amd64", nfpm: "amd64"},
}

// LookupArch returns the target for a Debian architecture name.
func LookupArch(deb string) (Arch, error) {
	a, ok := Arches[deb]
	if !ok {
		names := make([]string, 0, len(Arches))
		for n := range Arches {
			names = append(names, n)
		}
		sort.Strings(names)
		return Arch{}, fmt.Errorf("architecture %q: %w (want one of %v)", deb, ErrArch, names)
	}
	return a, nil
}
