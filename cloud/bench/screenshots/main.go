// Command screenshots captures the web console's pages from a running
// `bowline dev` into the PNGs the README shows (docs/console/*.png), with
// headless chromium at 1280x800. It reads what the run shows; it adds
// nothing to it (scripts/screenshots starts the default run, waits, runs
// this, breaks a chain with `bowline dev tamper` and runs it again for the
// broken-chain page; docs/console.md, "Screenshots").
//
// Proving ground: a tool run against the product, never linked into it
// (docs/README.md, "The proving ground").
//
//	go run ./cloud/bench/screenshots --login URL [--out docs/console] [--only a.png,b.png]
//
// --login is the one-click login URL `bowline dev` prints. Each page waits
// for what it is meant to show (orders on the commerce page, an open dead
// letter, a broken chain) and fails, naming it, when that never appears.
// It lives under cloud/bench because mains live only there and in
// cloud/cmd (docs/README.md, "Layout"); it is a tool, not a measurement.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// Window size of every screenshot (docs/console.md: laid out for 1280x800).
const width, height = 1280, 800

// shot is one screenshot: the page, what must be on it first (a JS
// expression), an optional step before the capture, and whether to
// capture the whole page rather than the window.
type shot struct {
	File   string
	Path   string
	Ready  string
	What   string
	Before string
	Full   bool
}

// shots are the README's screenshots, in the order they are taken.
func shots(tenant, bowl string) []shot {
	return []shot{
		{File: "pipeline.png", Path: "", What: "the pipeline's stages", Ready: `document.querySelectorAll('li.stage').length > 0`},
		{File: "bowls.png", Path: "bowls", What: "the bowls", Ready: `!!document.querySelector('main table, main svg')`},
		{File: "tenants.png", Path: "tenants", What: "the tenants' chains verified", Ready: `!!document.querySelector('table.tenants td.chain[data-intact="true"]')`},
		{File: "tenant-log.png", Path: "tenants/" + tenant, What: "tenant " + tenant + "'s event log", Ready: `!!document.querySelector('table.log tr[data-seq]')`},
		{File: "event.png", Path: "tenants/" + tenant + "/events/2", What: "event 2 of " + tenant, Ready: `!!document.querySelector('dl.kv')`},
		{File: "commerce.png", Path: "commerce", What: "paid orders with their fan-out", Ready: `!!document.querySelector('table.orders td[data-state="done"]')`},
		{File: "bowl.png", Path: "bowls/" + bowl + "?window=30m", What: "bowl " + bowl + "'s chart", Ready: `!!document.querySelector('[data-points]:not([data-points="0"])')`, Full: true},
		{File: "dead-letters.png", Path: "dead-letters", What: "an open dead letter (the demo shop's planned provider failure)", Ready: `!!document.querySelector('table.letters tr[data-event] input[type=checkbox]')`,
			Before: `document.querySelector('table.letters tr[data-event] input[type=checkbox]').click()`},
		{File: "tenants-broken.png", Path: "tenants", What: "a broken chain (run `bowline dev tamper` first)", Ready: `!!document.querySelector('table.tenants td.chain[data-intact="false"]')`},
	}
}

func main() {
	login := flag.String("login", "", "the one-click login URL `bowline dev` prints (required)")
	out := flag.String("out", "docs/console", "directory for the PNGs")
	only := flag.String("only", "", "comma-separated file names to take (default: all but tenants-broken.png)")
	tenant := flag.String("tenant", "tenant-1", "tenant whose event log and event 2 are shown")
	bowl := flag.String("bowl", "gw-001:bowl-001", "bowl whose page is shown")
	wait := flag.Duration("wait", 2*time.Minute, "how long a page may take to show what it is meant to")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "screenshots: capture the console's pages from a running `bowline dev` (docs/console.md)\n\nUsage: go run ./cloud/bench/screenshots --login URL [flags]\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*login, *out, *only, *tenant, *bowl, *wait); err != nil {
		fmt.Fprintln(os.Stderr, "screenshots:", err)
		os.Exit(1)
	}
}

func run(login, out, only, tenant, bowl string, wait time.Duration) error {
	u, err := url.Parse(login)
	if err != nil || u.Host == "" || !strings.HasSuffix(u.Path, "/console/login") || u.Query().Get("token") == "" {
		return fmt.Errorf("--login %q: want the one-click URL `bowline dev` prints, http://HOST/console/login?token=...", login)
	}
	base := u.Scheme + "://" + u.Host + "/console/"
	all := shots(tenant, bowl)
	var todo []shot
	if only == "" {
		for _, s := range all {
			if s.File != "tenants-broken.png" {
				todo = append(todo, s)
			}
		}
	} else {
		for _, name := range strings.Split(only, ",") {
			i := slices.IndexFunc(all, func(s shot) bool { return s.File == name })
			if i < 0 {
				return fmt.Errorf("--only %q: no screenshot %q; want some of %s", only, name, names(all))
			}
			todo = append(todo, all[i])
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	bin, err := chromium()
	if err != nil {
		return err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(width, height), chromedp.Flag("disable-dev-shm-usage", true))
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel2 := chromedp.NewContext(alloc)
	defer cancel2()
	// The first Do starts the browser and ties it to its context: ctx
	// itself, not one of the timed children below.
	if err := chromedp.Do(ctx); err != nil {
		return fmt.Errorf("start chromium %s: %w", bin, err)
	}
	if err := do(ctx, time.Minute, chromedp.EmulateViewport(width, height), chromedp.Navigate(login)); err != nil {
		return fmt.Errorf("log in at %s: %w", base, err)
	}
	for _, s := range todo {
		if err := take(ctx, base, out, s, wait); err != nil {
			return err
		}
	}
	return nil
}

// take opens s's page, waits until it shows what it is meant to, and
// writes the PNG.
func take(ctx context.Context, base, out string, s shot, wait time.Duration) error {
	if err := do(ctx, time.Minute, chromedp.Navigate(base+s.Path)); err != nil {
		return fmt.Errorf("%s: open %s: %w", s.File, base+s.Path, err)
	}
	deadline := time.Now().Add(wait)
	for {
		ok, err := eval[bool](ctx, s.Ready)
		if err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s never showed %s within %s (last error %v)", s.File, base+s.Path, s.What, wait, err)
		}
		time.Sleep(time.Second)
		// Pages update their live region by themselves; a reload now and
		// then covers one that waits for a verification pass.
		if time.Now().Second()%15 == 0 {
			_ = do(ctx, time.Minute, chromedp.Reload())
		}
	}
	if s.Before != "" {
		if _, err := eval[any](ctx, s.Before); err != nil {
			return fmt.Errorf("%s: %w", s.File, err)
		}
	}
	var capture chromedp.Action[[]byte] = chromedp.CaptureScreenshot()
	if s.Full {
		capture = chromedp.FullScreenshot(100) // 100: PNG
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	raw, err := chromedp.Run(cctx, capture)
	if err != nil {
		return fmt.Errorf("%s: capture: %w", s.File, err)
	}
	small, err := recompress(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", s.File, err)
	}
	path := filepath.Join(out, s.File)
	if err := os.WriteFile(path, small, 0o644); err != nil {
		return err
	}
	fmt.Printf("%s  %d KB\n", path, len(small)/1024)
	return nil
}

// recompress re-encodes a PNG at the best compression (chromium's are
// written fast, not small; the PNGs are committed).
func recompress(raw []byte) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("decode chromium's PNG: %w", err)
	}
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&b, img); err != nil {
		return nil, fmt.Errorf("encode PNG: %w", err)
	}
	if b.Len() > len(raw) {
		return raw, nil
	}
	return b.Bytes(), nil
}

func do(ctx context.Context, timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return chromedp.Do(ctx, steps...)
}

func eval[T any](ctx context.Context, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

func names(all []shot) string {
	var n []string
	for _, s := range all {
		n = append(n, s.File)
	}
	return strings.Join(n, ", ")
}

// chromium finds Debian's chromium (./scripts/setup installs it).
func chromium() (string, error) {
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium on PATH: run ./scripts/setup, or: apt-get install -y chromium")
}
