package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/sdk/client"
)

// Environment variables a command receives besides the runner's own environment.
const (
	// EnvToolName is the served name the call runs.
	EnvToolName = "NEXUS_TOOL_NAME"
	// EnvRunPublicID and EnvTaskKey name the row.
	EnvRunPublicID = "NEXUS_RUN_PUBLIC_ID"
	EnvTaskKey     = "NEXUS_TASK_KEY"
	// EnvToolInput is the call's tool_input as JSON (also on standard input).
	EnvToolInput = "NEXUS_TOOL_INPUT"
	// EnvCaptureDir is an empty directory: every regular file the command leaves in it is
	// staged as a capture and linked in the result, in name order.
	EnvCaptureDir = "NEXUS_CAPTURE_DIR"
)

// MaxOutputBytes bounds the standard output kept as a command's text result: the result bound
// is 1 MiB of content and structured content together, and the text's JSON escaping needs room.
const MaxOutputBytes = 512 << 10

// Command is a tool served by running a program: the call's tool_input arrives as JSON on
// standard input (and in NEXUS_TOOL_INPUT), its standard output becomes the text of the result,
// files it writes to NEXUS_CAPTURE_DIR become captures linked after the text, and a non-zero
// exit reports an error the model reads (is_error). A program that cannot be started is a failed
// outcome.
type Command struct {
	// Argv is the program and its arguments; the program is looked up in PATH.
	Argv []string
	// Dir is the working directory; "" means the runner's.
	Dir string
	// Env adds variables to the runner's environment.
	Env map[string]string
}

// Handler returns the Handler that runs the command.
func (c Command) Handler() Handler {
	return func(ctx context.Context, call *Call) (*client.Result, error) {
		if len(c.Argv) == 0 {
			return nil, errors.New("the tool has no command")
		}
		dir, err := os.MkdirTemp("", "nexus-capture-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		input := string(call.Input)
		if input == "" {
			input = "null"
		}
		cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
		cmd.Dir = c.Dir
		cmd.Stdin = strings.NewReader(input)
		cmd.Env = append(os.Environ(), EnvToolName+"="+call.Row.ToolName, EnvRunPublicID+"="+call.Row.RunPublicID,
			EnvTaskKey+"="+call.Row.TaskKey, EnvToolInput+"="+input, EnvCaptureDir+"="+dir)
		for k, v := range c.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout = &limitedBuffer{b: &stdout, n: MaxOutputBytes}
		cmd.Stderr = &limitedBuffer{b: &stderr, n: MaxOutputBytes}
		runErr := cmd.Run()
		var exit *exec.ExitError
		if runErr != nil && !errors.As(runErr, &exit) {
			return nil, fmt.Errorf("%s could not run: %w", c.Argv[0], runErr)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		text := storableText(stdout.String())
		res := &client.Result{Title: strings.Join(c.Argv, " ")}
		if exit != nil {
			res.IsError = true
			if msg := storableText(strings.TrimSpace(stderr.String())); msg != "" {
				text = strings.TrimRight(text, "\n") + "\n" + msg
			}
			text = strings.TrimLeft(text+fmt.Sprintf("\n(exit status %d)", exit.ExitCode()), "\n")
		}
		blocks := []client.ContentBlock{client.TextBlock(text)}
		links, err := stageDir(ctx, call, dir)
		if err != nil {
			return nil, err
		}
		res.Content = append(blocks, links...)
		return res, nil
	}
}

// stageDir stages every regular file of dir, in name order, and returns links to them.
func stageDir(ctx context.Context, call *Call, dir string) ([]client.ContentBlock, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	var links []client.ContentBlock
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		up, err := call.Stage(ctx, e.Name(), f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("staging %s: %w", e.Name(), err)
		}
		links = append(links, client.LinkBlock(up, e.Name()))
	}
	return links, nil
}

// storableText makes a program's output storable: invalid UTF-8 becomes U+FFFD and U+0000 is
// dropped, the two things the result envelope refuses as unstorable.
func storableText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.ReplaceAll(s, "\x00", "")
}

// limitedBuffer keeps the first n bytes written and discards the rest, so that a chatty
// program cannot grow the runner's memory.
type limitedBuffer struct {
	b interface {
		Len() int
		Write([]byte) (int, error)
	}
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		if len(p) > room {
			l.b.Write(p[:room])
		} else {
			l.b.Write(p)
		}
	}
	return len(p), nil
}
