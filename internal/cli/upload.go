package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/sdk/client"
)

func newUpload(e *env, g *globals) *cobra.Command {
	f := &adminFlags{}
	cmd := &cobra.Command{Use: "upload", Short: "Upload files a model may read, and read uploads back"}
	f.register(cmd)

	var name string
	put := &cobra.Command{
		Use:   "put FILE [--name NAME]",
		Short: "Upload a file (- for standard input, with --name); prints its id",
		Long: `Upload a file for runs and messages to attach (docs/api.md, "Uploads"): the server detects its
type from its bytes, keeps at most 100 MiB, and deletes an upload nothing attaches after 24 hours.
"nexus run create --attach FILE" and "nexus conversation send --attach FILE" upload and attach in
one step; this command prints the id to attach by hand (--quiet: the id alone).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "-" && name == "" {
				return usageErrorf("an upload from standard input needs --name")
			}
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			res, err := e.upload(cmd.Context(), c, args[0], name)
			if err != nil {
				return err
			}
			switch {
			case f.json:
				return e.raw(res.Raw)
			case f.quiet:
				_, err := fmt.Fprintln(e.stdout, res.Upload.PublicID)
				return err
			}
			return e.printUpload(&res.Upload)
		},
	}
	put.Flags().StringVar(&name, "name", "", "the file name the upload keeps (default: FILE's base name)")
	f.registerQuiet(put, "the upload's public id")

	show := &cobra.Command{
		Use:   "show UPLOAD",
		Short: "Show an upload's name, type, size, digest and expiry",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			res, err := c.Upload(cmd.Context(), args[0])
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			return e.printUpload(&res.Upload)
		},
	}

	var output string
	get := &cobra.Command{
		Use:   "get UPLOAD [--output FILE]",
		Short: "Write an upload's bytes to standard output, or to --output FILE",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			res, err := c.UploadBytes(cmd.Context(), args[0], nil)
			if err != nil {
				return apiError(err)
			}
			defer res.Body.Close()
			if output == "" || output == "-" {
				_, err := io.Copy(e.stdout, res.Body)
				return err
			}
			return writeFileFrom(output, res.Body)
		},
	}
	get.Flags().StringVarP(&output, "output", "o", "", "write the bytes to FILE instead of standard output")

	cmd.AddCommand(put, show, get)
	return cmd
}

// upload streams a file (- for standard input) to the server as the caller's upload.
func (e *env) upload(ctx context.Context, c *client.Client, path, name string) (*client.UploadResponse, error) {
	var r io.Reader
	if path == "-" {
		r = e.stdin
		if r == nil {
			r = os.Stdin
		}
	} else {
		file, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer file.Close()
		r = file
		if name == "" {
			name = filepath.Base(path)
		}
	}
	res, err := c.CreateUpload(ctx, name, r)
	if err != nil {
		return nil, apiError(err)
	}
	return res, nil
}

// attachAll uploads each file and answers the upload ids, in order, for a message's or a model
// step's attachments.
func (e *env) attachAll(ctx context.Context, c *client.Client, files []string) ([]string, error) {
	ids := make([]string, 0, len(files))
	for _, path := range files {
		if path == "-" {
			return nil, usageErrorf("--attach takes files; upload standard input with nexus upload put - --name NAME")
		}
		res, err := e.upload(ctx, c, path, "")
		if err != nil {
			return nil, fmt.Errorf("--attach %s: %w", path, err)
		}
		ids = append(ids, res.Upload.PublicID)
	}
	return ids, nil
}

func (e *env) printUpload(u *client.Upload) error {
	expires := "never (a result or input binds it)"
	if u.ExpiresAt != nil {
		expires = when(*u.ExpiresAt)
	}
	return fields(e.stdout, "upload", u.PublicID, "uri", u.URI(), "name", u.Filename, "type", u.ContentType,
		"size", fmt.Sprintf("%d bytes", u.ByteSize), "sha256", u.SHA256, "created", when(u.CreatedAt), "expires", expires)
}

// writeFileFrom writes r to path through a temporary file beside it, so that a failed read
// leaves no half-written file.
func writeFileFrom(path string, r io.Reader) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = io.Copy(tmp, r); err != nil {
		_ = tmp.Close()
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
