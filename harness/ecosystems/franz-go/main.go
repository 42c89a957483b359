// Command franz is a test client built on franz-go (github.com/twmb/franz-go): an
// idempotent producer and a committing group consumer that print one JSON object per
// line on stdout, shaped like Apache Kafka's VerifiableProducer, so one harness reads
// both.
//
//	franz produce --bootstrap B --topic T [--rate N] [--keys K] [--max M] [--size S]
//	              [--linger-ms L] [--flush-timeout-s F]
//	franz consume --bootstrap B --topic T --group G
//
// produce sends the values "0", "1", ... in order with key n % K; every record carries
// a header "sent_ns" (its send time, Unix nanoseconds) and, with --size, a header "pad"
// that brings the record to about S bytes. It prints producer_send_success or
// producer_send_error per record, producer_epoch whenever the client's producer id or
// epoch changes, and shutdown_complete after SIGTERM (or --max records): sending
// stops, everything buffered is flushed (exit 0; exit 1 if that takes more than
// --flush-timeout-s, the records left reported as producer_send_error).
//
// consume prints partitions_assigned, then one "record" per record (with e2e_ms, the
// time from the record's sent_ns to its arrival here, when the header is there); it
// commits what it printed (franz-go's autocommit of previous polls) and, on SIGTERM,
// commits everything printed, leaves the group and exits 0.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// out writes one JSON object per line; safe for franz-go's callback goroutines.
type out struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (o *out) emit(fields map[string]any) {
	line, err := json.Marshal(fields)
	if err != nil {
		panic(err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.w.Write(line)
	o.w.WriteByte('\n')
}

func (o *out) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.w.Flush()
}

var stdout = &out{w: bufio.NewWriterSize(os.Stdout, 1<<16)}

// epochWatch is franz-go's logger: every producer id/epoch the client takes (an
// InitProducerId answer, or a local epoch bump after a produce error) becomes a
// producer_epoch line; warnings and errors go to stderr.
type epochWatch struct {
	mu        sync.Mutex
	id        int64
	epoch     int16
	announced bool
}

// FRANZ_LOG=debug (or info) also prints franz-go's own log at that level to stderr.
var printed = map[string]kgo.LogLevel{"debug": kgo.LogLevelDebug, "info": kgo.LogLevelInfo}[os.Getenv("FRANZ_LOG")]

func (e *epochWatch) Level() kgo.LogLevel {
	if printed > kgo.LogLevelInfo {
		return printed
	}
	return kgo.LogLevelInfo
}

func (e *epochWatch) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	values := map[string]any{}
	for i := 0; i+1 < len(keyvals); i += 2 {
		values[fmt.Sprint(keyvals[i])] = keyvals[i+1]
	}
	switch msg {
	case "producer id initialization success":
		e.observe(values["id"], values["epoch"])
	case "locally bumping idempotent producer epoch to recover from a prior produce error":
		e.observe(values["id"], values["new_epoch"])
	}
	if level <= kgo.LogLevelWarn || level <= printed {
		fmt.Fprintf(os.Stderr, "franz-go %s: %s %v\n", level, msg, keyvals)
	}
}

func (e *epochWatch) observe(id, epoch any) {
	pid, ok1 := id.(int64)
	pepoch, ok2 := epoch.(int16)
	if !ok1 || !ok2 {
		return
	}
	e.mu.Lock()
	changed := !e.announced || pid != e.id || pepoch != e.epoch
	e.id, e.epoch, e.announced = pid, pepoch, true
	e.mu.Unlock()
	if changed {
		stdout.emit(map[string]any{"name": "producer_epoch", "producer_id": pid, "epoch": pepoch})
		stdout.flush()
	}
}

type produceArgs struct {
	bootstrap, topic, prefix string
	rate, keys, max, size    int
	lingerMs, flushS         int
}

func produce(ctx context.Context, a produceArgs) error {
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(a.bootstrap, ",")...), kgo.DefaultProduceTopic(a.topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.WithLogger(&epochWatch{}),
	}
	if a.lingerMs >= 0 {
		opts = append(opts, kgo.ProducerLinger(time.Duration(a.lingerMs)*time.Millisecond))
	}
	client, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	started := time.Now()
	for n := 0; a.max < 0 || n < a.max; n++ {
		if a.rate > 0 {
			due := started.Add(time.Duration(float64(n) / float64(a.rate) * float64(time.Second)))
			if wait := time.Until(due); wait > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(wait):
				}
			}
		}
		if ctx.Err() != nil {
			break
		}
		outstanding.Add(1)
		client.Produce(context.Background(), record(n, a), report)
	}
	flushing, cancel := context.WithTimeout(context.Background(), time.Duration(a.flushS)*time.Second)
	defer cancel()
	err = client.Flush(flushing)
	client.Close() // records still buffered (flush timed out) are reported as send errors
	outstanding.Wait()
	stdout.emit(map[string]any{"name": "shutdown_complete"})
	stdout.flush()
	return err
}

func record(n int, a produceArgs) *kgo.Record {
	value := strconv.Itoa(n)
	if a.prefix != "" {
		value = a.prefix + "." + value // several producers on one topic, told apart
	}
	r := &kgo.Record{Key: []byte(strconv.Itoa(n % a.keys)), Value: []byte(value)}
	r.Headers = []kgo.RecordHeader{{Key: "sent_ns", Value: []byte(strconv.FormatInt(time.Now().UnixNano(), 10))}}
	if pad := a.size - len(value) - 32; pad > 0 {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: "pad", Value: make([]byte, pad)})
	}
	return r
}

// outstanding counts the records whose promise has not run yet.
var outstanding sync.WaitGroup

// report is the per-record promise: franz-go calls it in send order per partition.
func report(r *kgo.Record, err error) {
	defer outstanding.Done()
	line := map[string]any{"key": string(r.Key), "value": string(r.Value), "topic": r.Topic}
	if sent, ok := sentAt(r); ok {
		line["ack_ms"] = float64(time.Now().UnixNano()-sent) / 1e6
	}
	if err != nil {
		line["name"], line["exception"] = "producer_send_error", err.Error()
	} else {
		line["name"], line["partition"], line["offset"] = "producer_send_success", r.Partition, r.Offset
	}
	stdout.emit(line)
	stdout.flush()
}

func sentAt(r *kgo.Record) (int64, bool) {
	for _, h := range r.Headers {
		if h.Key == "sent_ns" {
			sent, err := strconv.ParseInt(string(h.Value), 10, 64)
			return sent, err == nil
		}
	}
	return 0, false
}

func consume(ctx context.Context, bootstrap, topic, group string) error {
	assigned := func(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
		stdout.emit(map[string]any{"name": "partitions_assigned", "partitions": parts[topic]})
		stdout.flush()
	}
	client, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(assigned),
	)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		fetches := client.PollFetches(ctx)
		arrived := time.Now().UnixNano()
		fetches.EachError(func(t string, p int32, err error) {
			if ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "fetch %s[%d]: %v\n", t, p, err)
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			line := map[string]any{"name": "record", "partition": r.Partition, "offset": r.Offset,
				"key": string(r.Key), "value": string(r.Value)}
			if sent, ok := sentAt(r); ok {
				line["e2e_ms"] = float64(arrived-sent) / 1e6
			}
			stdout.emit(line)
		})
		stdout.flush() // printed before franz-go's autocommit can commit it
		client.AllowRebalance()
	}
	committing, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = client.CommitUncommittedOffsets(committing)
	stdout.emit(map[string]any{"name": "offsets_committed", "success": err == nil})
	client.CloseAllowingRebalance()
	stdout.emit(map[string]any{"name": "shutdown_complete"})
	stdout.flush()
	return err
}

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "produce" && os.Args[1] != "consume") {
		fmt.Fprintln(os.Stderr, "usage: franz produce|consume --bootstrap HOST:PORT --topic TOPIC ...")
		os.Exit(2)
	}
	mode := os.Args[1]
	flags := flag.NewFlagSet(mode, flag.ExitOnError)
	var a produceArgs
	var group string
	flags.StringVar(&a.bootstrap, "bootstrap", "", "bootstrap servers, comma-separated")
	flags.StringVar(&a.topic, "topic", "", "the topic")
	flags.IntVar(&a.rate, "rate", -1, "records per second (<= 0: as fast as possible)")
	flags.IntVar(&a.keys, "keys", 60, "key = str(n % keys)")
	flags.StringVar(&a.prefix, "prefix", "", "values are PREFIX.n instead of n")
	flags.IntVar(&a.max, "max", -1, "records to send (< 0: until SIGTERM)")
	flags.IntVar(&a.size, "size", 0, "pad each record to about this many bytes (a header)")
	flags.IntVar(&a.lingerMs, "linger-ms", -1, "producer linger (< 0: franz-go's default)")
	flags.IntVar(&a.flushS, "flush-timeout-s", 120, "after SIGTERM or --max, wait this long for acks")
	flags.StringVar(&group, "group", "", "consumer group (consume)")
	flags.Parse(os.Args[2:])
	if a.bootstrap == "" || a.topic == "" || (mode == "consume" && group == "") || a.keys < 1 {
		fmt.Fprintln(os.Stderr, "franz "+mode+": --bootstrap and --topic are required (consume: --group too; --keys >= 1)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var err error
	if mode == "produce" {
		err = produce(ctx, a)
	} else {
		err = consume(ctx, a.bootstrap, a.topic, group)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "franz "+mode+":", err)
		os.Exit(1)
	}
}
