// Package pglocal finds a PostgreSQL server to use, or starts a private one
// under the repository's .data/ folder with the system's initdb and pg_ctl.
// `treasury dev` and the test suite both stand on it, so that `make run`
// and `make test` work on a machine where PostgreSQL is not running yet.
package pglocal

import (
	"context"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultURL is the server these machines usually have.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// PrivatePort is where the private cluster listens.
const PrivatePort = 54329

// InstallHint tells a person how to get PostgreSQL's programs.
const InstallHint = "install PostgreSQL: on Debian or Ubuntu `sudo apt-get install -y postgresql` " +
	"(or `make postgres`), on macOS `brew install postgresql`; or set DATABASE_URL to a server you have"

// Found describes the server Ensure settled on.
type Found struct {
	AdminURL string // a URL to the maintenance database "postgres"
	Source   string // "DATABASE_URL", "127.0.0.1:5432" or "private cluster in <dir>"
}

// Ensure returns a reachable server: the one explicit (if given), else
// 127.0.0.1:5432, else a private cluster in dataDir (started if needed).
func Ensure(ctx context.Context, explicit, dataDir string) (Found, error) {
	if explicit != "" {
		return Found{AdminURL: explicit, Source: "DATABASE_URL"}, nil
	}
	if Reachable(ctx, DefaultURL) {
		return Found{AdminURL: DefaultURL, Source: "127.0.0.1:5432"}, nil
	}
	url, err := startPrivate(ctx, dataDir)
	if err != nil {
		return Found{}, err
	}
	return Found{AdminURL: url, Source: "private cluster in " + dataDir}, nil
}

// Reachable reports whether a connection to url succeeds within 2 seconds.
func Reachable(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return false
	}
	conn.Close(ctx)
	return true
}

func privateURL() string { return (&Cluster{Port: PrivatePort}).URL() }

func startPrivate(ctx context.Context, dataDir string) (string, error) {
	url := privateURL()
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return "", err
	}
	// Several test binaries may get here at once: one starts the cluster.
	lock, err := os.OpenFile(filepath.Join(dataDir, "pg.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	if Reachable(ctx, url) {
		return url, nil
	}
	c, err := NewCluster(dataDir, PrivatePort)
	if err != nil {
		return "", err
	}
	if err := c.Start(ctx); err != nil {
		return "", err
	}
	return url, nil
}

// Cluster is a private PostgreSQL cluster: its data lives in Dir/pg and it
// listens on 127.0.0.1:Port only (no Unix socket).
type Cluster struct {
	Dir  string
	Port int
	// Settings are more server settings, name=value, given to the server
	// at each start (-c).
	Settings []string
	bin      string
	cred     *syscall.Credential
}

// NewCluster finds PostgreSQL's programs for a cluster in dir.
func NewCluster(dir string, port int) (*Cluster, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cred, err := runAs(dir)
	if err != nil {
		return nil, err
	}
	return &Cluster{Dir: dir, Port: port, bin: bin, cred: cred}, nil
}

// URL is the cluster's maintenance database.
func (c *Cluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.Port)
}

// Start initializes the cluster if it is new and starts it, waiting until
// it accepts connections.
func (c *Cluster) Start(ctx context.Context) error {
	pgdata := filepath.Join(c.Dir, "pg")
	if _, err := os.Stat(filepath.Join(pgdata, "PG_VERSION")); err != nil {
		if err := run(ctx, c.cred, filepath.Join(c.bin, "initdb"), "-D", pgdata, "-U", "postgres",
			"--auth=trust", "-E", "UTF8", "--no-instructions"); err != nil {
			return fmt.Errorf("initdb: %w", err)
		}
	}
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c max_connections=300", c.Port)
	for _, setting := range c.Settings {
		opts += " -c " + setting
	}
	logFile := filepath.Join(c.Dir, "postgres.log")
	if err := run(ctx, c.cred, filepath.Join(c.bin, "pg_ctl"), "-D", pgdata, "-o", opts,
		"-l", logFile, "-w", "-t", "60", "start"); err != nil {
		return fmt.Errorf("pg_ctl start (log in %s): %w", logFile, err)
	}
	if !Reachable(ctx, c.URL()) {
		return fmt.Errorf("started PostgreSQL in %s but cannot connect to %s", pgdata, c.URL())
	}
	return nil
}

// NewStandby copies the running cluster into a streaming replica in dir
// that listens on port (pg_basebackup -R: it follows this cluster over
// replication, which initdb --auth=trust lets 127.0.0.1 do). Start it.
func (c *Cluster) NewStandby(ctx context.Context, dir string, port int) (*Cluster, error) {
	s, err := NewCluster(dir, port)
	if err != nil {
		return nil, err
	}
	if err := run(ctx, s.cred, filepath.Join(s.bin, "pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(c.Port),
		"-U", "postgres", "-D", filepath.Join(dir, "pg"), "-R", "-X", "stream", "-c", "fast"); err != nil {
		return nil, fmt.Errorf("pg_basebackup: %w", err)
	}
	return s, nil
}

// Stop shuts the cluster down (fast mode: open sessions are ended).
func (c *Cluster) Stop(ctx context.Context) error {
	return run(ctx, c.cred, filepath.Join(c.bin, "pg_ctl"), "-D", filepath.Join(c.Dir, "pg"), "-m", "fast", "-w", "stop")
}

// BinDir finds the directory holding initdb and pg_ctl.
func BinDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if isFile(filepath.Join(dir, "initdb")) {
			return dir, nil
		}
	}
	// Debian keeps the server programs out of PATH, one folder per version.
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	best, bestVersion := "", -1
	for _, m := range matches {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(m))))
		if v > bestVersion {
			best, bestVersion = filepath.Dir(m), v
		}
	}
	if best != "" {
		return best, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no PostgreSQL server programs (initdb, pg_ctl) found: " + InstallHint)
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// runAs picks the user to run PostgreSQL as: ourselves, or, because
// PostgreSQL refuses to run as root, the "postgres" system user.
func runAs(dataDir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("running as root and there is no 'postgres' user to run PostgreSQL as: " + InstallHint)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := filepath.Walk(dataDir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func run(ctx context.Context, cred *syscall.Credential, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = "/"
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// RepoRoot walks up from the working directory to the folder with go.mod.
func RepoRoot() string {
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if isFile(filepath.Join(d, "go.mod")) {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// WithDatabase returns url with its database name replaced.
func WithDatabase(rawURL, db string) (string, error) {
	u, err := neturl.Parse(rawURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("database URL must be a postgres:// URL")
	}
	u.Path = "/" + db
	return u.String(), nil
}

// HostPort is a helper for messages: the address of a URL.
func HostPort(url string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return "?"
	}
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
}
