package pgserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// dirPrefix names the temporary directories of throwaway clusters, so that a
// later Start can recognise (and remove) those whose owner died.
const dirPrefix = "oceanway-pg-"

// cluster is a throwaway PostgreSQL cluster owned by this process.
type cluster struct {
	dir  string // root: data/, postgres.log, owner.pid
	port int
	bin  string
	cred *syscall.Credential

	done     chan struct{} // closed when the postmaster exited
	pid      int
	stopOnce sync.Once
	stopErr  error
}

func (c *cluster) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// BinDir returns the directory holding initdb and postgres: OCEANWAY_PG_BIN,
// then PATH, then the newest /usr/lib/postgresql/*/bin.
func BinDir() (string, error) {
	if d := os.Getenv(EnvBinDir); d != "" {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
		return "", fmt.Errorf("%s=%s holds no initdb/postgres", EnvBinDir, d)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			d := filepath.Dir(real)
			if isExec(filepath.Join(d, "postgres")) {
				return d, nil
			}
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL server binaries (initdb, postgres) not found on PATH or in /usr/lib/postgresql/*/bin; install them (Debian/Ubuntu: apt-get install postgresql) or set " + EnvBinDir)
}

func versionOf(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// runAs returns the credential to run the server binaries with: initdb and
// postgres refuse to run as root, so root runs them as the postgres OS user.
func runAs() (*syscall.Credential, int, int, error) {
	if os.Geteuid() != 0 {
		return nil, -1, -1, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, 0, 0, fmt.Errorf("running as root needs the postgres OS user to start a cluster: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, uid, gid, nil
}

func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C.UTF-8", "LANG=C.UTF-8")
}

func startCluster(ctx context.Context, logf func(string, ...any)) (*cluster, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, uid, gid, err := runAs()
	if err != nil {
		return nil, err
	}
	sweepStale(logf)

	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, uid, gid); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C",
		"--no-sync", "--no-instructions")
	initdb.Env = childEnv()
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w: %s", err, strings.TrimSpace(string(out)))
	}

	var lastErr error
	for try := 0; try < 5; try++ {
		port, err := freePort()
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		c := &cluster{dir: dir, port: port, bin: bin, cred: cred, done: make(chan struct{})}
		if err := c.launch(ctx, bin, cred); err != nil {
			lastErr = err
			continue
		}
		return c, nil
	}
	_ = os.RemoveAll(dir)
	return nil, lastErr
}

// launch starts the postmaster as a child of a goroutine locked to its OS
// thread: the parent death signal fires when that thread exits, and the
// thread lives exactly as long as the postmaster or this process.
func (c *cluster) launch(ctx context.Context, bin string, cred *syscall.Credential) error {
	logFile, err := os.OpenFile(filepath.Join(c.dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"),
		"-D", filepath.Join(c.dir, "data"),
		"-p", strconv.Itoa(c.port),
		"-k", c.dir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=300",
		"-c", "shared_buffers=128MB",
		"-c", "max_locks_per_transaction=256",
	)
	cmd.Env = childEnv()
	cmd.Dir = c.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}

	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()                 // never unlocked: the thread dies with this goroutine
		defer func() { _ = logFile.Close() }() // the server's own log: nobody left to report a close error to
		if err := cmd.Start(); err != nil {
			started <- err
			close(c.done)
			return
		}
		c.pid = cmd.Process.Pid
		started <- nil
		_ = cmd.Wait()
		close(c.done)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-c.done:
			log, _ := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
			return fmt.Errorf("postgres exited during start-up: %s", tail(string(log), 2000))
		default:
		}
		if err := ping(ctx, c.url()+"&connect_timeout=2"); err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			c.kill()
			return fmt.Errorf("postgres did not accept connections on port %d", c.port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// restart shuts the postmaster down immediately (SIGQUIT, what pg_ctl -m
// immediate sends: no checkpoint, crash recovery at the next start) and
// starts it again on the same data directory and port.
func (c *cluster) restart(ctx context.Context) error {
	c.kill()
	c.done = make(chan struct{})
	return c.launch(ctx, c.bin, c.cred)
}

func (c *cluster) kill() {
	if c.pid > 0 {
		_ = syscall.Kill(c.pid, syscall.SIGQUIT)
	}
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(c.pid, syscall.SIGKILL)
		<-c.done
	}
}

func (c *cluster) stop() error {
	c.stopOnce.Do(func() {
		if c.pid > 0 {
			_ = syscall.Kill(c.pid, syscall.SIGINT) // fast shutdown
			select {
			case <-c.done:
			case <-time.After(15 * time.Second):
				c.kill()
			}
		}
		c.stopErr = os.RemoveAll(c.dir)
	})
	return c.stopErr
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }() // only the port number was wanted
	return l.Addr().(*net.TCPAddr).Port, nil
}

// sweepStale removes throwaway cluster directories whose owner process is
// gone, stopping a postmaster that survived it.
func sweepStale(logf func(string, ...any)) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join(d, "owner.pid"))
		if err != nil {
			if st, serr := os.Stat(d); serr == nil && time.Since(st.ModTime()) > 10*time.Minute {
				_ = os.RemoveAll(d)
			}
			continue
		}
		owner, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
		if owner <= 0 || alive(owner) {
			continue
		}
		if pm, err := os.ReadFile(filepath.Join(d, "data", "postmaster.pid")); err == nil {
			if pid, _ := strconv.Atoi(strings.SplitN(string(pm), "\n", 2)[0]); pid > 0 && alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGQUIT)
			}
		}
		logf("pgserver: removing stale cluster %s (owner %d gone)", d, owner)
		_ = os.RemoveAll(d)
	}
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
