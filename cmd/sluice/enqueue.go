package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/app/queue"
	"github.com/sluicehq/sluice/sources/natsjs"
)

// sourceFlags are the connection flags of the commands that talk to the
// queue (enqueue, status). Each flag that is given replaces the matching
// setting of the source config; the others keep its value.
type sourceFlags struct {
	config   string // -c FILE: start from the file's source section
	natsURL  string
	dataDir  string
	natsPort int
	stream   string
	subject  string
}

func (f *sourceFlags) register(cmd *cobra.Command) {
	d := config.Default().Source.JetStream
	fl := cmd.Flags()
	fl.StringVarP(&f.config, "config", "c", "", "config file; its source section is used, and the flags below replace its values")
	fl.StringVar(&f.natsURL, "nats-url", d.URL, `NATS server URL, or "embedded" to use (or start) the embedded server (source.jetstream.url)`)
	fl.StringVar(&f.dataDir, "data-dir", d.Embedded.StoreDir, "embedded server's store directory (source.jetstream.embedded.store_dir)")
	fl.IntVar(&f.natsPort, "nats-port", d.Embedded.Port, "embedded server's port on 127.0.0.1; 0 or -1 for a random free one (source.jetstream.embedded.port)")
	fl.StringVar(&f.stream, "stream", d.Stream, "JetStream stream of the jobs (source.jetstream.stream)")
	fl.StringVar(&f.subject, "subject", d.Subjects[0], "subject the jobs are published on (source.jetstream.publish_subject)")
}

// load reads the config file's source section, applies the flags and
// checks the result; every error it returns is a usage or config error
// (exit status 2).
func (f *sourceFlags) load(cmd *cobra.Command) (config.Source, error) {
	cfg, err := f.loadConfig(cmd)
	return cfg.Source, err
}

// loadConfig is load with the rest of the config file (the defaults
// without one): status also reads limiter.share.
func (f *sourceFlags) loadConfig(cmd *cobra.Command) (config.Config, error) {
	cfg, err := commandConfig(f.config)
	if err == nil {
		err = f.apply(cmd, &cfg.Source)
	}
	if err == nil {
		err = cfg.Source.Check()
	}
	return cfg, cli.UsageError(err)
}

// apply lays the flags that were given over cfg.
func (f *sourceFlags) apply(cmd *cobra.Command, cfg *config.Source) error {
	changed := func(name string) bool { return cmd.Flags().Changed(name) }
	given := false
	for _, n := range []string{"nats-url", "data-dir", "nats-port", "stream", "subject"} {
		given = given || changed(n)
	}
	if !given {
		return nil
	}
	if cfg.Kind != config.SourceJetStream {
		return fmt.Errorf("the --nats-* flags, --data-dir, --stream and --subject apply to source.kind %q, not %q", config.SourceJetStream, cfg.Kind)
	}
	js := &cfg.JetStream
	if changed("nats-url") {
		js.URL = f.natsURL
	}
	if changed("data-dir") {
		js.Embedded.StoreDir = f.dataDir
	}
	if changed("nats-port") {
		js.Embedded.Port = f.natsPort
	}
	if changed("stream") {
		js.Stream = f.stream
	}
	if changed("subject") {
		js.PublishSubject = f.subject
		// With the default stream subjects, the subject becomes the
		// stream's; a configured stream must already cover it.
		if len(js.Subjects) == 1 && js.Subjects[0] == natsjs.DefaultSubject {
			js.Subjects = []string{f.subject}
		}
	}
	return nil
}

func newEnqueueCmd() *cobra.Command {
	var f sourceFlags
	cmd := &cobra.Command{
		Use:   "enqueue [flags] FILE|-",
		Short: "Publish job envelopes from a JSON-lines file (or - for stdin) onto the queue",
		Long: `enqueue reads one job envelope per line,
  {"id","type","method","path","headers","body" | "body_base64","cost"}
(every field optional), and publishes each line as one message. A job's id
is its message id, so publishing the same file twice within the queue's
duplicate window enqueues each job once; a line without an id gets one
derived from its content (sha256 of the compacted JSON). A line that is not
a JSON object, or whose id is not a string or whose cost is not a number
>= 0, or that is larger than the queue accepts (a NATS server's max_payload,
Pub/Sub's 10 MB), is reported with its line number and skipped; the lines
after it are published, and the exit status is then 1.

With the embedded server (the default), enqueue uses the server of a
sluice process already running on the same --data-dir, or starts its own
on that directory for the time it runs.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := f.load(cmd)
			if err != nil {
				return err
			}
			res, err := queue.EnqueueFile(cmd.Context(), cfg, args[0], cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err == nil && res.Bad > 0 {
				err = &cli.ExitError{Code: 1}
			}
			return err
		},
	}
	f.register(cmd)
	return cmd
}
