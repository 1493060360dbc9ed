package localstack

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

const setupHint = "run ./scripts/setup"

// startDynamoDB runs AWS's DynamoDB Local jar, in memory.
func startDynamoDB(ctx context.Context, root string, log *slog.Logger) (*process, error) {
	java, err := lookPath("java", "install a JDK 17+ (apt-get install openjdk-17-jdk-headless)")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "deploy", "local", "dynamodb-local")
	jar := filepath.Join(dir, "DynamoDBLocal.jar")
	if _, err := os.Stat(jar); err != nil {
		return nil, fmt.Errorf("DynamoDB Local jar not found at %s: %s: %w", jar, setupHint, ErrNotInstalled)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	// Through deploy/local/DynamoDBLoopback.java, which binds it to
	// 127.0.0.1: the jar alone binds every interface and has no option for it.
	// -disableTelemetry: DynamoDB Local reports its starts to AWS otherwise.
	cmd := exec.Command(java,
		"-Xms64m", "-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.library.path="+filepath.Join(dir, "DynamoDBLocal_lib"),
		"-cp", jar+string(os.PathListSeparator)+filepath.Join(dir, "DynamoDBLocal_lib", "*"),
		filepath.Join(root, "deploy", "local", "DynamoDBLoopback.java"),
		"-inMemory", "-disableTelemetry", "-port", strconv.Itoa(port))
	cmd.Dir = dir
	p, err := launch("DynamoDB Local", cmd, log)
	if err != nil {
		return nil, err
	}
	p.endpoint = loopbackURL(port)
	// A real API call: ListTables with dummy credentials.
	return p, p.waitReady(ctx, jsonProbe(p.endpoint, "DynamoDB_20120810.ListTables", "application/x-amz-json-1.0"))
}

// startFauxqs runs the fauxqs SQS emulator.
func startFauxqs(ctx context.Context, root string, log *slog.Logger) (*process, error) {
	node, err := lookPath("node", "install Node.js 20+ (apt-get install nodejs npm)")
	if err != nil {
		return nil, err
	}
	cli := filepath.Join(root, "deploy", "local", "node_modules", "fauxqs", "dist", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		return nil, fmt.Errorf("fauxqs not found at %s: %s (npm ci in deploy/local): %w", cli, setupHint, ErrNotInstalled)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(node, "--require", loopbackPreload(root), cli)
	cmd.Dir = filepath.Dir(cli)
	cmd.Env = append(os.Environ(), "FAUXQS_PORT="+strconv.Itoa(port), "FAUXQS_HOST=127.0.0.1")
	p, err := launch("fauxqs (SQS)", cmd, log)
	if err != nil {
		return nil, err
	}
	p.endpoint = loopbackURL(port)
	return p, p.waitReady(ctx, jsonProbe(p.endpoint, "AmazonSQS.ListQueues", "application/x-amz-json-1.0"))
}

// loopbackPreload is the script that makes a Node emulator listen on
// 127.0.0.1 only (both hard-code 0.0.0.0).
func loopbackPreload(root string) string {
	return filepath.Join(root, "deploy", "local", "loopback.cjs")
}

// startKinesis runs kinesis-local (kinesis-mock) from its own folder so it
// finds server.json.
func startKinesis(ctx context.Context, root string, log *slog.Logger) (*process, error) {
	node, err := lookPath("node", "install Node.js 20+ (apt-get install nodejs npm)")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "deploy", "local", "node_modules", "kinesis-local")
	if _, err := os.Stat(filepath.Join(dir, "main.js")); err != nil {
		return nil, fmt.Errorf("kinesis-local not found in %s: %s (npm ci in deploy/local): %w", dir, setupHint, ErrNotInstalled)
	}
	plain, err := freePort()
	if err != nil {
		return nil, err
	}
	tlsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	// A larger young generation: kinesis-local allocates a short-lived
	// copy of every record it parses and prints, and with node's default
	// semi-space a quarter of its time went to scavenges in the fleet
	// bench (docs/telemetry-path.md, "Fleet bench").
	cmd := exec.Command(node, "--max-semi-space-size=64", "--require", loopbackPreload(root), "main.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"KINESIS_MOCK_PLAIN_PORT="+strconv.Itoa(plain),
		"KINESIS_MOCK_TLS_PORT="+strconv.Itoa(tlsPort),
		"CREATE_STREAM_DURATION=100ms",
		"DELETE_STREAM_DURATION=100ms",
		"LOG_LEVEL=WARN",
	)
	p, err := launch("kinesis-local", cmd, log)
	if err != nil {
		return nil, err
	}
	p.endpoint = loopbackURL(plain)
	return p, p.waitReady(ctx, jsonProbe(p.endpoint, "Kinesis_20131202.ListStreams", "application/x-amz-json-1.1"))
}

// jsonProbe makes one unsigned-but-well-formed AWS JSON-protocol call and
// succeeds on a 200. Emulators accept any credentials.
func jsonProbe(endpoint, target, contentType string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/", strings.NewReader("{}"))
		if err != nil {
			return err
		}
		req.Header.Set("X-Amz-Target", target)
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("X-Amz-Date", time.Now().UTC().Format("20060102T150405Z"))
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/probe/aws4_request, SignedHeaders=host;x-amz-date, Signature=0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s answered %s", target, resp.Status)
		}
		return nil
	}
}
