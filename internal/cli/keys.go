package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/ownerread/ownerhttp"
	"github.com/oceanway/core/internal/workload"
)

// A keys directory (`oceanway keys generate --dir D`) holds every key pair a
// one-machine install needs, each as <name>.key (PKCS #8 PEM, 0600) and
// <name>.pub:
//
//   - core-token: Core's run execution token key (issueRunExecutionToken
//     signs with it; Execution's openRun trusts its public half);
//   - core-grant: Core's command grant key (the case operations' grant
//     exchange signs with it, Billing verifies its public half);
//   - platform: the platform's workload, the caller of the platform API
//     (internal: PUBLIC_ADMISSION_MODE does not apply to it);
//   - public.web: a public caller of admitRun (every trusted public.*
//     workload is), refused while PUBLIC_ADMISSION_MODE is disabled;
//   - owner.<owner>: each owner process's workload (owner reads and
//     deliveries between owner processes).
//
// Every <name>.pub but Core's two keys' is a workload serve --keys trusts.
const (
	keyCoreToken = "core-token"
	keyCoreGrant = "core-grant"
	keyPlatform  = "platform"
	keyPublic    = "public.web"
)

// keyNames are the key pairs of a keys directory, in the order written.
func keyNames() []string {
	names := []string{keyCoreToken, keyCoreGrant, keyPlatform, keyPublic}
	for _, b := range boundary.All {
		names = append(names, ownerhttp.OwnerWorkload(string(b)))
	}
	return names
}

func keyPath(dir, name, ext string) string { return filepath.Join(dir, name+ext) }

func newKeysCmd(streams *IO) *cobra.Command {
	cmd := &cobra.Command{Use: "keys", Short: "Key pairs of a one-machine install", Args: cobra.NoArgs}
	var dir string
	gen := &cobra.Command{
		Use:   "generate",
		Short: "Write every key pair a one-machine install needs into --dir (never overwrites)",
		Long: `generate writes Ed25519 key pairs into --dir (created 0700 when absent): core-token (Core's
run execution token key), core-grant (Core's command grant key), public.web (a public caller of
admitRun, refused while PUBLIC_ADMISSION_MODE is disabled), platform (the platform's workload, which calls the API) and
owner.<owner> for core, execution, gateway and metering (the owner processes' workloads). A
directory that already holds any of them is refused: keys are never overwritten. Use it with
oceanway serve --keys D, oceanway demo --via api --keys D and oceanway canary --keys D.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if dir == "" {
				return errors.New("keys generate: --dir is required")
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			for _, n := range keyNames() {
				for _, ext := range []string{".key", ".pub"} {
					if _, err := os.Stat(keyPath(dir, n, ext)); !errors.Is(err, fs.ErrNotExist) {
						return fmt.Errorf("keys generate: %s exists already; keys are never overwritten", keyPath(dir, n, ext))
					}
				}
			}
			for _, n := range keyNames() {
				if err := writeKeyPair(dir, n); err != nil {
					return err
				}
			}
			fmt.Fprintf(streams.Out, "keys: wrote %s into %s\n", strings.Join(keyNames(), ", "), dir)
			return nil
		},
	}
	gen.Flags().StringVar(&dir, "dir", "", "the directory to write the key pairs into")
	cmd.AddCommand(gen)
	return cmd
}

// writeKeyPair writes a new key pair name.key / name.pub into dir.
func writeKeyPair(dir, name string) error {
	priv, pub, err := workload.Generate()
	if err != nil {
		return err
	}
	privPEM, err := workload.EncodePrivateKey(priv)
	if err != nil {
		return err
	}
	pubPEM, err := workload.EncodePublicKey(pub)
	if err != nil {
		return err
	}
	// O_EXCL: a key is never overwritten.
	if err := writeNew(keyPath(dir, name, ".key"), privPEM, 0o600); err != nil {
		return err
	}
	return writeNew(keyPath(dir, name, ".pub"), pubPEM, 0o644)
}

func writeNew(path string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// keysDir is what serve --keys D (and the API's clients) read from D.
type keysDir struct {
	dir string
}

// trustedWorkloads lists D's workloads as --trust-workload values
// (name=path), sorted: every <name>.pub but Core's token key.
func (k keysDir) trustedWorkloads() ([]string, error) {
	pubs, err := filepath.Glob(filepath.Join(k.dir, "*.pub"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pubs {
		name := strings.TrimSuffix(filepath.Base(p), ".pub")
		if name != keyCoreToken && name != keyCoreGrant {
			out = append(out, name+"="+p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--keys %s: no workload key (*.pub); run oceanway keys generate --dir %s", k.dir, k.dir)
	}
	sort.Strings(out)
	return out, nil
}

// private is D's private key of name, which must exist.
func (k keysDir) private(name string) (string, error) {
	p := keyPath(k.dir, name, ".key")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("--keys %s: %w (run oceanway keys generate --dir %s)", k.dir, err, k.dir)
	}
	return p, nil
}

// public is D's public key of name, which must exist.
func (k keysDir) public(name string) (string, error) {
	p := keyPath(k.dir, name, ".pub")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("--keys %s: %w (run oceanway keys generate --dir %s)", k.dir, err, k.dir)
	}
	return p, nil
}
