package cli

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// listenTCP listens on addr, or takes over an inherited listening socket
// when addr is "fd:N" (N ≥ 3, a descriptor the parent passed, which
// listenTCP then owns and closes: never name a descriptor this process
// uses for anything else). The demo's
// owner processes are started this way: the parent binds every port
// before any child starts and keeps it bound across chaos restarts, so no
// other process can take a port between choosing and binding it.
func listenTCP(addr string) (net.Listener, error) {
	fdText, inherited := strings.CutPrefix(addr, "fd:")
	if !inherited {
		return net.Listen("tcp", addr)
	}
	fd, err := strconv.Atoi(fdText)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("listen address %q: want host:port or fd:N with N ≥ 3", addr)
	}
	f := os.NewFile(uintptr(fd), "inherited-listener-"+fdText)
	if f == nil {
		return nil, fmt.Errorf("listen address %q: descriptor %d is not open", addr, fd)
	}
	defer func() { _ = f.Close() }() // FileListener holds its own duplicate
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", addr, err)
	}
	return ln, nil
}
