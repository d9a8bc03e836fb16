package cli

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestListenTakesOverAnInheritedSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f, err := ln.(*net.TCPListener).File()
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // the duplicate keeps the port bound
	// listenTCP takes and closes the descriptor it is named, so it gets one
	// nothing else owns: f's own descriptor would be closed twice (by
	// listenTCP, then by f's finalizer after the number was reused by
	// another test's database connection, which then hangs forever).
	fd, err := syscall.Dup(int(f.Fd()))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	inherited, err := listenTCP(fmt.Sprintf("fd:%d", fd))
	require.NoError(t, err)
	require.Equal(t, addr, inherited.Addr().String(), "the same bound port, not a new one")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })}
	go func() { _ = srv.Serve(inherited) }()
	t.Cleanup(func() { _ = srv.Close() })
	resp, err := http.Get("http://" + addr + "/")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestListenRefusesABadDescriptor(t *testing.T) {
	for _, addr := range []string{"fd:", "fd:x", "fd:2", "fd:-1"} {
		_, err := listenTCP(addr)
		require.ErrorContains(t, err, "fd:N", addr)
	}
	// A descriptor that is not a listening socket (a file this test owns:
	// listenTCP takes and closes the descriptor it is given, so a test
	// must never name one it does not own, such as another test's
	// database connection).
	f, err := os.CreateTemp(t.TempDir(), "not-a-socket")
	require.NoError(t, err)
	fd, err := syscall.Dup(int(f.Fd()))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = listenTCP(fmt.Sprintf("fd:%d", fd))
	require.Error(t, err, "a descriptor that is not a listening socket")
}
