// Package transport is where files are exchanged with the sponsor bank: a
// folder on this machine (file:///path) or on the bank's SFTP server
// (sftp://user@host:port/path). The ACH connector writes its outbound files
// to one folder and reads what the bank sends from another.
package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"
)

// Folder is one folder of files exchanged with the bank.
type Folder interface {
	// Put writes a file atomically: under a temporary name, then renamed,
	// so the bank never collects half a file. A file of that name is
	// replaced.
	Put(ctx context.Context, name string, data []byte) error
	// List names the files of the folder, sorted: not its subfolders, not
	// the temporary files of a Put under way (names starting with a dot).
	List(ctx context.Context) ([]string, error)
	// Get reads a file.
	Get(ctx context.Context, name string) ([]byte, error)
	// Move moves a file into a subfolder (processed, rejected), made if
	// missing; a file of that name there is replaced.
	Move(ctx context.Context, name, subfolder string) error
	// String is the folder's address, without credentials.
	String() string
	Close() error
}

// SFTPConfig is how an sftp:// folder authenticates.
type SFTPConfig struct {
	// KeyFile is the client's private key (TREASURY_SFTP_KEY_FILE).
	KeyFile string
	// KnownHostsFile pins the server's host key (TREASURY_SFTP_KNOWN_HOSTS):
	// a server whose key is not in it is refused.
	KnownHostsFile string
}

// Open opens the folder at address: file:///absolute/path or
// sftp://user@host:port/path.
func Open(address string, cfg SFTPConfig) (Folder, error) {
	u, err := url.Parse(address)
	if err != nil {
		return nil, fmt.Errorf("transport: %q is not a URL: %w", address, err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("transport: %q: a file:// folder is on this machine (file:///path)", address)
		}
		if !path.IsAbs(u.Path) {
			return nil, fmt.Errorf("transport: %q: the path must be absolute", address)
		}
		return newLocalFolder(u.Path)
	case "sftp":
		if u.User == nil || u.User.Username() == "" {
			return nil, fmt.Errorf("transport: %q: name the user (sftp://user@host:port/path)", address)
		}
		if _, set := u.User.Password(); set {
			return nil, fmt.Errorf("transport: %q: no password in the address: the key is TREASURY_SFTP_KEY_FILE", redact(u))
		}
		if u.Port() == "" {
			u.Host += ":22"
		}
		return newSFTPFolder(u, cfg)
	default:
		return nil, fmt.Errorf("transport: %q: the scheme must be file or sftp", address)
	}
}

func redact(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User(c.User.Username())
	}
	return c.String()
}

// ErrBadName is the error for a file name that is not a plain name.
var ErrBadName = errors.New("transport: a file name is one path element, not starting with a dot")

// checkName refuses what would leave the folder or hide from List.
func checkName(name string) error {
	if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") || strings.ContainsRune(name, 0) {
		return fmt.Errorf("%w: %q", ErrBadName, name)
	}
	return nil
}

// MaxFileSize bounds a file Get reads: a NACHA file of 100,000 entries is
// under 20 MB.
const MaxFileSize = 64 << 20

// ErrTooLarge is Get's refusal of a file of more than MaxFileSize bytes.
var ErrTooLarge = fmt.Errorf("transport: a file may have at most %d bytes", MaxFileSize)

// readLimited reads r whole, refusing more than MaxFileSize.
func readLimited(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%w: %s is larger", ErrTooLarge, name)
	}
	return data, nil
}

// tempName is where Put writes before its rename.
func tempName(name string, nonce string) string { return "." + name + "." + nonce + ".tmp" }
