/*
 * bench/scale.py's producer: Kafka's Java client sends one ProduceRequest per broker with
 * every ready partition in it, where librdkafka (confluent-kafka 2.16) sends one request
 * per partition: 10,000 records over 1,000 partitions cost 10,074 requests, which on this
 * machine made a confluent-kafka loader and a 5,000 records/s source take longer than the
 * copy they were meant to feed. Run from source, no build step:
 *
 *   java -cp "<kafka jars>/*" bench/ScaleProducer.java BOOTSTRAP load PREFIX TOPICS PER_TOPIC RECORDS SIZE
 *   java -cp "<kafka jars>/*" bench/ScaleProducer.java BOOTSTRAP steady PREFIX TOPICS PER_TOPIC RATE SECONDS SIZE WARMUP_S
 *
 * Topics are PREFIX + five digits (00000 ...). Records go round robin over every partition
 * (load: RECORDS per partition; steady: RATE records/s for SECONDS, each stamped with its
 * send time as CreateTime). Prints one JSON line: what was sent, how long it took, and for
 * steady the acknowledgement latency percentiles of the records sent after WARMUP_S.
 */
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class ScaleProducer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], mode = args[1], prefix = args[2];
        int topics = Integer.parseInt(args[3]), perTopic = Integer.parseInt(args[4]);
        List<String> names = new ArrayList<>();
        for (int t = 0; t < topics; t++) names.add(String.format("%s%05d", prefix, t));
        if (mode.equals("load")) {
            load(bootstrap, names, perTopic, Integer.parseInt(args[5]), Integer.parseInt(args[6]));
        } else {
            steady(bootstrap, names, perTopic, Integer.parseInt(args[5]),
                    Double.parseDouble(args[6]), Integer.parseInt(args[7]), Double.parseDouble(args[8]));
        }
    }

    /** A producer that already knows every topic's leaders: without it, the first send to
     * each topic blocks for a metadata round trip (1,000 topics: seconds, under load more
     * than the copy being measured). */
    static KafkaProducer<byte[], byte[]> warm(
            String bootstrap, int lingerMs, List<String> names, int partitions) {
        KafkaProducer<byte[], byte[]> producer = producer(bootstrap, lingerMs, partitions);
        for (String topic : names) producer.partitionsFor(topic);
        return producer;
    }

    /** Every partition's open batch holds batch.size bytes of buffer.memory: 1 MB batches
     * over 1,000 partitions would block send() until others drain. */
    static KafkaProducer<byte[], byte[]> producer(String bootstrap, int lingerMs, int partitions) {
        long memory = 512L << 20;
        long batch = Math.max(16_384, Math.min(1_000_000, memory / 2 / partitions));
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("acks", "all");
        props.put("linger.ms", Integer.toString(lingerMs));
        props.put("batch.size", Long.toString(batch));
        props.put("max.request.size", "16000000");
        props.put("buffer.memory", Long.toString(memory));
        // A slow broker delays records (the latency says so); it fails none.
        props.put("max.block.ms", "600000");
        props.put("delivery.timeout.ms", "900000");
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        return new KafkaProducer<>(props);
    }

    static void load(String bootstrap, List<String> names, int perTopic, int records, int size)
            throws Exception {
        byte[] payload = new byte[size];
        new Random(33).nextBytes(payload);
        AtomicLong failed = new AtomicLong();
        KafkaProducer<byte[], byte[]> producer = warm(bootstrap, 50, names, names.size() * perTopic);
        long start = System.nanoTime(), sent = 0;
        try (producer) {
            for (int r = 0; r < records; r++) {
                for (String topic : names) {
                    for (int p = 0; p < perTopic; p++) {
                        byte[] value = payload.clone();
                        for (int i = 0; i < 4; i++) value[i] = (byte) (r >>> (8 * i));
                        producer.send(new ProducerRecord<>(topic, p, null, value),
                                (meta, error) -> {
                                    if (error != null && failed.incrementAndGet() == 1) {
                                        System.err.println("first failure: " + error);
                                    }
                                });
                        sent++;
                    }
                }
            }
            producer.flush();
            describe(producer);
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        System.out.printf("{\"sent\": %d, \"failed\": %d, \"seconds\": %.2f}%n", sent, failed.get(), seconds);
    }

    static void steady(String bootstrap, List<String> names, int perTopic, int rate, double seconds,
            int size, double warmup) throws Exception {
        byte[] payload = new byte[size];
        new Random(34).nextBytes(payload);
        int partitions = names.size() * perTopic;
        List<Double> acks = new ArrayList<>();
        AtomicLong failed = new AtomicLong();
        long sent = 0;
        KafkaProducer<byte[], byte[]> producer = warm(bootstrap, 5, names, names.size() * perTopic);
        long start = System.currentTimeMillis();
        long counted = start + (long) (warmup * 1000);
        long t0 = System.nanoTime();
        try (producer) {
            while (true) {
                double elapsed = (System.nanoTime() - t0) / 1e9;
                if (elapsed >= seconds) break;
                long due = (long) (elapsed * rate);
                for (; sent < due; sent++) {
                    int i = (int) (sent % partitions);
                    long stamp = System.currentTimeMillis();
                    producer.send(
                            new ProducerRecord<>(names.get(i / perTopic), i % perTopic, stamp, null, payload),
                            (meta, error) -> {
                                if (error != null) {
                                    if (failed.incrementAndGet() == 1) {
                                        System.err.println("first failure: " + error);
                                    }
                                } else if (stamp >= counted) {
                                    double ms = System.currentTimeMillis() - stamp;
                                    synchronized (acks) { acks.add(ms); }
                                }
                            });
                }
                Thread.sleep(1);
            }
            producer.flush();
        }
        double[] sorted;
        synchronized (acks) { sorted = acks.stream().mapToDouble(Double::doubleValue).toArray(); }
        Arrays.sort(sorted);
        System.out.printf(
                "{\"sent\": %d, \"failed\": %d, \"start_ms\": %d, \"ack\": {\"p50_ms\": %s, \"p99_ms\": %s, \"max_ms\": %s}}%n",
                sent, failed.get(), start, pct(sorted, 0.50), pct(sorted, 0.99),
                sorted.length == 0 ? "null" : Double.toString(sorted[sorted.length - 1]));
    }

    /** The producer's own view of how it sent (to stderr, for the log). */
    static void describe(KafkaProducer<byte[], byte[]> producer) {
        List<String> wanted = List.of("request-total", "request-latency-avg", "request-latency-max",
                "records-per-request-avg", "batch-size-avg", "record-queue-time-avg",
                "record-queue-time-max", "bufferpool-wait-time-ns-total", "record-retry-total",
                "produce-throttle-time-avg", "metadata-wait-time-ns-total");
        producer.metrics().forEach((name, metric) -> {
            if (name.group().equals("producer-metrics") && wanted.contains(name.name())) {
                System.err.println(name.name() + " = " + metric.metricValue());
            }
        });
    }

    static String pct(double[] sorted, double q) {
        if (sorted.length == 0) return "null";
        return Double.toString(sorted[(int) Math.min(sorted.length - 1, Math.round(q * (sorted.length - 1)))]);
    }
}
