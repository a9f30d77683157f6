package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// sftpFolder is a folder on the bank's SFTP server. It keeps one
// connection, made when first needed and dropped after any failure (the
// next call dials again).
type sftpFolder struct {
	addr, dir string
	config    *ssh.ClientConfig
	display   string

	mu     sync.Mutex
	conn   *ssh.Client
	client *sftp.Client
}

// dialTimeout bounds the TCP connection and the SSH handshake.
const dialTimeout = 10 * time.Second

func newSFTPFolder(u *url.URL, cfg SFTPConfig) (*sftpFolder, error) {
	if cfg.KeyFile == "" || cfg.KnownHostsFile == "" {
		return nil, errors.New("transport: an sftp:// folder needs TREASURY_SFTP_KEY_FILE and TREASURY_SFTP_KNOWN_HOSTS")
	}
	pem, err := os.ReadFile(cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("transport: the SFTP key: %w", err)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		return nil, fmt.Errorf("transport: the SFTP key %s: %w", cfg.KeyFile, err)
	}
	hostKey, err := knownhosts.New(cfg.KnownHostsFile)
	if err != nil {
		return nil, fmt.Errorf("transport: the SFTP known hosts: %w", err)
	}
	dir := u.Path
	if dir == "" {
		dir = "."
	}
	return &sftpFolder{
		addr: u.Host, dir: dir, display: redact(u),
		config: &ssh.ClientConfig{User: u.User.Username(), Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
			HostKeyCallback: hostKey, Timeout: dialTimeout},
	}, nil
}

func (f *sftpFolder) String() string { return f.display }

func (f *sftpFolder) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.drop()
}

func (f *sftpFolder) drop() error {
	var err error
	if f.client != nil {
		err = f.client.Close()
	}
	if f.conn != nil {
		err = errors.Join(err, f.conn.Close())
	}
	f.client, f.conn = nil, nil
	return err
}

// do runs op on the connection, dialling first if there is none. ctx
// ending closes the connection, which ends op.
func (f *sftpFolder) do(ctx context.Context, op func(*sftp.Client) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.client == nil {
		var d net.Dialer
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		raw, err := d.DialContext(dctx, "tcp", f.addr)
		cancel()
		if err != nil {
			return fmt.Errorf("transport: %s: %w", f.display, err)
		}
		raw.SetDeadline(time.Now().Add(dialTimeout))
		c, chans, reqs, err := ssh.NewClientConn(raw, f.addr, f.config)
		if err != nil {
			raw.Close()
			return fmt.Errorf("transport: %s: %w", f.display, err)
		}
		raw.SetDeadline(time.Time{})
		f.conn = ssh.NewClient(c, chans, reqs)
		if f.client, err = sftp.NewClient(f.conn); err != nil {
			f.drop()
			return fmt.Errorf("transport: %s: %w", f.display, err)
		}
	}
	conn := f.conn
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	err := op(f.client)
	if !stop() || err != nil {
		f.drop()
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("transport: %s: %w", f.display, err)
	}
	return nil
}

func (f *sftpFolder) Put(ctx context.Context, name string, data []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	return f.do(ctx, func(c *sftp.Client) error {
		tmp := path.Join(f.dir, tempName(name, nonce()))
		file, err := c.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
		if err != nil {
			return err
		}
		if _, err := file.Write(data); err != nil {
			file.Close()
			c.Remove(tmp)
			return err
		}
		if err := file.Close(); err != nil {
			c.Remove(tmp)
			return err
		}
		// posix-rename replaces a file of that name, as a local rename does.
		if err := c.PosixRename(tmp, path.Join(f.dir, name)); err != nil {
			c.Remove(tmp)
			return err
		}
		return nil
	})
}

func (f *sftpFolder) List(ctx context.Context) ([]string, error) {
	var names []string
	err := f.do(ctx, func(c *sftp.Client) error {
		infos, err := c.ReadDir(f.dir)
		if err != nil {
			return err
		}
		for _, info := range infos {
			if info.Mode().IsRegular() && checkName(info.Name()) == nil {
				names = append(names, info.Name())
			}
		}
		return nil
	})
	slices.Sort(names)
	return names, err
}

func (f *sftpFolder) Get(ctx context.Context, name string) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	var data []byte
	err := f.do(ctx, func(c *sftp.Client) error {
		file, err := c.Open(path.Join(f.dir, name))
		if err != nil {
			return err
		}
		defer file.Close()
		data, err = readLimited(file, name)
		return err
	})
	return data, err
}

func (f *sftpFolder) Move(ctx context.Context, name, subfolder string) error {
	if err := errors.Join(checkName(name), checkName(subfolder)); err != nil {
		return err
	}
	return f.do(ctx, func(c *sftp.Client) error {
		sub := path.Join(f.dir, subfolder)
		if err := c.MkdirAll(sub); err != nil {
			return err
		}
		return c.PosixRename(path.Join(f.dir, name), path.Join(sub, name))
	})
}
