package pkgedge

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/elf"
	"encoding/pem"
	"errors"
	"flag"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blakesmith/ar"

	"github.com/bowline-iot/bowline/edge/config"

	"github.com/bowline-iot/bowline/internal/testkit"
)

func repoRoot(t testing.TB) string {
	t.Helper()
	if r := os.Getenv("BOWLINE_ROOT"); r != "" {
		return r
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = filepath.Dir(dir)
	}
}

// debFile is an unpacked .deb: the control fields and the data files by path.
type debFile struct {
	control map[string]string
	files   map[string][]byte
	modes   map[string]int64
	scripts map[string]bool
}

func readDeb(t *testing.T, path string) debFile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := debFile{control: map[string]string{}, files: map[string][]byte{}, modes: map[string]int64{}, scripts: map[string]bool{}}
	r := ar.NewReader(f)
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: ar: %v", path, err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		if name != "control.tar.gz" && name != "data.tar.gz" {
			continue
		}
		zr, err := gzip.NewReader(r)
		if err != nil {
			t.Fatalf("%s %s: %v", path, name, err)
		}
		tr := tar.NewReader(zr)
		for {
			th, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s %s: %v", path, name, err)
			}
			body, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			p := strings.TrimPrefix(th.Name, ".")
			if name == "data.tar.gz" {
				d.files[strings.TrimSuffix(p, "/")] = body
				d.modes[strings.TrimSuffix(p, "/")] = th.Mode
				continue
			}
			if p == "/control" {
				for _, line := range strings.Split(string(body), "\n") {
					if k, v, ok := strings.Cut(line, ": "); ok {
						d.control[k] = v
					}
				}
			} else {
				d.scripts[strings.TrimPrefix(p, "/")] = true
			}
		}
	}
	return d
}

// TestDebContents builds bowline-edge once per architecture, packs each into
// a .deb in t.TempDir() and checks what a gateway installs: the control
// architecture, an ELF binary for the right machine, the unit, the config
// (as a conffile), the sysusers entry, the certificate directory and the
// maintainer scripts. The packaged config must pass the agent's own loader.
func TestDebContents(t *testing.T) {
	testkit.Long(t, "cross-compiles bowline-edge twice")
	root := repoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // hang guard
	defer cancel()
	for _, tc := range []struct {
		arch    string
		machine elf.Machine
	}{
		{"arm64", elf.EM_AARCH64},
		{"armhf", elf.EM_ARM},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			arch, err := LookupArch(tc.arch)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			bin := filepath.Join(dir, "bowline-edge")
			if err := BuildBinary(ctx, root, arch, bin); err != nil {
				t.Fatal(err)
			}
			file, err := Package(ctx, Config{Root: root, Arch: arch, Binary: bin, OutDir: filepath.Join(dir, "out"), Version: "1.2.3"})
			if err != nil {
				t.Fatal(err)
			}
			if want := "bowline-edge_1.2.3_" + tc.arch + ".deb"; filepath.Base(file) != want {
				t.Errorf("package file = %s; want %s", filepath.Base(file), want)
			}
			d := readDeb(t, file)
			if got := d.control["Architecture"]; got != tc.arch {
				t.Errorf("control Architecture = %q; want %q", got, tc.arch)
			}
			if got := d.control["Package"]; got != "bowline-edge" {
				t.Errorf("control Package = %q; want bowline-edge", got)
			}
			ef, err := elf.NewFile(bytes.NewReader(d.files[BinaryPath]))
			if err != nil {
				t.Fatalf("%s is not an ELF binary: %v", BinaryPath, err)
			}
			if ef.Machine != tc.machine {
				t.Errorf("%s machine = %v; want %v", BinaryPath, ef.Machine, tc.machine)
			}
			if d.modes[BinaryPath]&0o111 == 0 {
				t.Errorf("%s mode %o; want executable", BinaryPath, d.modes[BinaryPath])
			}
			for _, p := range []string{UnitPath, ConfigPath, SysusersPath} {
				want, err := os.ReadFile(filepath.Join(root, EdgeDir, map[string]string{
					UnitPath: "bowline-edge.service", ConfigPath: "config.json", SysusersPath: "sysusers.conf"}[p]))
				if err != nil {
					t.Fatal(err)
				}
				if got, ok := d.files[p]; !ok || !bytes.Equal(got, want) {
					t.Errorf("%s in the package differs from deploy/edge (present %v)", p, ok)
				}
			}
			if _, ok := d.files[CertsDir]; !ok || d.modes[CertsDir]&0o007 != 0 {
				t.Errorf("%s present %v mode %o; want a directory closed to others", CertsDir, ok, d.modes[CertsDir])
			}
			for _, s := range []string{"conffiles", "postinst", "prerm", "postrm"} {
				if !d.scripts[s] {
					t.Errorf("control archive has no %s", s)
				}
			}
			cfgPath := filepath.Join(dir, "config.json")
			if err := os.WriteFile(cfgPath, d.files[ConfigPath], 0o644); err != nil {
				t.Fatal(err)
			}
			checkAgentAccepts(t, root, cfgPath, string(d.files[UnitPath]))
		})
	}
}

// checkAgentAccepts loads the packaged config with edge/config exactly as
// the unit starts the agent: --config plus the identity flags of ExecStart
// filled from identity.env.example. The certificate paths are pointed at
// freshly generated files (the real ones are provisioned per gateway).
func checkAgentAccepts(t *testing.T, root, cfgPath, unit string) {
	t.Helper()
	file, err := config.Load(cfgPath)
	if err != nil {
		t.Fatalf("edge config.Load(packaged config): %v", err)
	}
	for _, p := range []string{file.TLS.CA, file.TLS.Cert, file.TLS.Key} {
		if !strings.HasPrefix(p, CertsDir+"/") {
			t.Errorf("certificate path %q; want under %s", p, CertsDir)
		}
	}
	env := map[string]string{}
	example, err := os.ReadFile(filepath.Join(root, EdgeDir, "identity.env.example"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(example), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			env[k] = v
		}
	}
	args := execStartArgs(t, unit)
	if len(args) < 2 || args[0] != BinaryPath || args[1] != "run" {
		t.Fatalf("ExecStart = %q; want %s run ...", args, BinaryPath)
	}
	for i, a := range args {
		args[i] = os.Expand(a, func(k string) string { return env[k] })
	}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	cfgFlag := fs.String("config", "", "")
	fs.Bool("log-json", false, "")
	config.Flags(fs, &file)
	if err := fs.Parse(args[2:]); err != nil {
		t.Fatalf("ExecStart flags %q: %v", args[2:], err)
	}
	if *cfgFlag != ConfigPath {
		t.Errorf("ExecStart --config %q; want %s", *cfgFlag, ConfigPath)
	}
	file.TLS.CA, file.TLS.Cert, file.TLS.Key = writeTestCerts(t)
	if _, err := file.Agent(); err != nil {
		t.Errorf("the agent rejects the packaged config: %v", err)
	}
}

// execStartArgs splits the unit's ExecStart on spaces (the unit uses no
// quoting).
func execStartArgs(t *testing.T, unit string) []string {
	t.Helper()
	for _, line := range strings.Split(unit, "\n") {
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			return strings.Fields(v)
		}
	}
	t.Fatal("unit has no ExecStart")
	return nil
}

// writeTestCerts writes a self-signed CA, a client certificate and its key.
func writeTestCerts(t *testing.T) (ca, cert, key string) {
	t.Helper()
	dir := t.TempDir()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gw-0001"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", der), write("device.pem.crt", "CERTIFICATE", der), write("private.pem.key", "EC PRIVATE KEY", kder)
}

// TestEdgeBinaryLinksNoPackagerOrAWS: nfpm (and the AWS SDK) stay out of
// bowline-edge; only this packaging tool links nfpm.
func TestEdgeBinaryLinksNoPackagerOrAWS(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", EdgeMain)
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", EdgeMain, err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/goreleaser/", "github.com/aws/", "github.com/bowline-iot/bowline/deploy/"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("bowline-edge links %s; want nothing under %s", dep, banned)
			}
		}
	}
}

func TestLookupArch(t *testing.T) {
	for _, tc := range []struct{ deb, goarch, goarm string }{{"arm64", "arm64", ""}, {"armhf", "arm", "7"}} {
		a, err := LookupArch(tc.deb)
		if err != nil || a.GOARCH != tc.goarch || a.GOARM != tc.goarm {
			t.Errorf("LookupArch(%q) = %+v, %v; want GOARCH %s GOARM %q", tc.deb, a, err, tc.goarch, tc.goarm)
		}
	}
	if _, err := LookupArch("mips"); !errors.Is(err, ErrArch) {
		t.Errorf("LookupArch(mips) error = %v; want ErrArch", err)
	}
}
