/*
 * failsafe's transactional clients on Kafka's Java client: the same ops as failsafe's librdkafka workers
 * (failsafe/workloads/txn_session.py, txn_producer.py, ctp.py), one JSON object per line on stdout.
 *
 *   writer     random transactions of min..max writes over the topics, rate_per_s a second, some aborted on purpose
 *   processor  consume-transform-produce: read the input at read_committed, one output record per input record,
 *              the input offsets committed in the same transaction (sendOffsetsToTransaction)
 *
 * The outcome rules are txn_session.py's: a transaction is ok only when commitTransaction returned; fail only when
 * abortTransaction returned and no commit was asked for; info otherwise. After a commit error there is no abort: a
 * commit that timed out is called again until --commit-timeout-s, and then, as after any other error, the producer is
 * closed at once (close(0): a graceful close would abort the open transaction) and a new one with the same
 * transactional.id runs initTransactions, which fences the old one and finishes its transaction. A fenced producer
 * records its transaction as info, writes a close op whose error says "fenced", and the driver exits 0.
 *
 * Compiled by failsafe at first use against the Kafka distribution's jars (failsafe/workloads/txn_java.py); nothing
 * else on the classpath. Stops after the current transaction on SIGTERM or when stdin closes.
 */
package failsafe;

import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.protocol.Errors;

public final class TxnDriver {
    static final String USAGE = "usage: TxnDriver writer|processor --process NAME --producer-property bootstrap.servers=HOST:PORT "
        + "--producer-property transactional.id=ID [--producer-property K=V ...] [--seed N] [--abort-probability P] [--commit-timeout-s S] "
        + "writer: --topic T [--topic T2 ...] [--rate-per-s R] [--count N] [--min-writes N] [--max-writes N] [--keys N]; "
        + "processor: --input T --output T --group G [--batch N] [--consumer-property K=V ...]";
    // Below the worker pool's 45 s SIGKILL: a transaction that cannot finish by then is the pool's to kill.
    static final long STOP_JOIN_MS = 40_000;
    static final Duration POLL = Duration.ofMillis(200);
    static final Duration COMMITTED_TIMEOUT = Duration.ofSeconds(10);
    static final Duration CONSUMER_CLOSE_TIMEOUT = Duration.ofSeconds(10);
    static final String CLOSED_IN_FLIGHT = "PRODUCER_CLOSED_IN_FLIGHT";

    // -- the ops, as failsafe's OpWriter writes them -------------------------------------------------------------
    /** One JSON line per op: time_ns, process, type, f, then the fields in the order given. Called from the driver's
     *  thread and the producer's I/O thread (send callbacks), hence synchronized. */
    static final class Ops {
        static final long FLUSH_INTERVAL_NS = 50_000_000L;
        final OutputStream out;
        final String process;
        long lastFlushNs = System.nanoTime();

        Ops(OutputStream out, String process) {
            this.out = out;
            this.process = process;
        }

        synchronized void op(String type, String f, Object... fields) {
            StringBuilder b = new StringBuilder(256);
            Instant now = Instant.now();
            b.append("{\"time_ns\":").append(now.getEpochSecond() * 1_000_000_000L + now.getNano());
            b.append(",\"process\":");
            json(b, process);
            b.append(",\"type\":");
            json(b, type);
            b.append(",\"f\":");
            json(b, f);
            for (int i = 0; i < fields.length; i += 2) {
                b.append(',');
                json(b, fields[i]);
                b.append(':');
                json(b, fields[i + 1]);
            }
            b.append("}\n");
            try {
                out.write(b.toString().getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new DriverError("cannot write to stdout: " + e.getMessage());
            }
            if (System.nanoTime() - lastFlushNs >= FLUSH_INTERVAL_NS) {
                flush();
            }
        }

        synchronized void flush() {
            try {
                out.flush();
            } catch (IOException e) {
                throw new DriverError("cannot write to stdout: " + e.getMessage());
            }
            lastFlushNs = System.nanoTime();
        }

        static void json(StringBuilder b, Object value) {
            if (value == null) {
                b.append("null");
            } else if (value instanceof String) {
                string(b, (String) value);
            } else if (value instanceof Number || value instanceof Boolean) {
                b.append(value);
            } else if (value instanceof Map) {
                b.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : ((Map<?, ?>) value).entrySet()) {
                    if (!first) b.append(',');
                    first = false;
                    string(b, String.valueOf(e.getKey()));
                    b.append(':');
                    json(b, e.getValue());
                }
                b.append('}');
            } else if (value instanceof Collection) {
                b.append('[');
                boolean first = true;
                for (Object item : (Collection<?>) value) {
                    if (!first) b.append(',');
                    first = false;
                    json(b, item);
                }
                b.append(']');
            } else {
                string(b, value.toString());
            }
        }

        static void string(StringBuilder b, String s) {
            b.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                switch (c) {
                    case '"': b.append("\\\""); break;
                    case '\\': b.append("\\\\"); break;
                    case '\n': b.append("\\n"); break;
                    case '\r': b.append("\\r"); break;
                    case '\t': b.append("\\t"); break;
                    default:
                        if (c < 0x20) {
                            b.append(String.format("\\u%04x", (int) c));
                        } else {
                            b.append(c);
                        }
                }
            }
            b.append('"');
        }
    }

    static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    // -- errors ----------------------------------------------------------------------------------------------------
    /** Another producer with the same transactional.id took over: this one must stop (a zombie). */
    static final class Fenced extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Fenced(String message) {
            super(message);
        }
    }

    /** The driver cannot go on: one line on stderr, exit 1 (what the worker pool quotes). */
    static final class DriverError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        DriverError(String message) {
            super(message);
        }
    }

    /** The producer refused a write (send threw, or failed it before it reached the accumulator): nothing was asked to commit. */
    static final class Refused extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Refused(RuntimeException cause) {
            super(cause);
        }
    }

    static boolean fenced(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof ProducerFencedException || t instanceof InvalidProducerEpochException || t instanceof TransactionalIdAuthorizationException) {
                return true;
            }
        }
        return false;
    }

    /** Errors after which this producer can do nothing more (librdkafka's fatal()). */
    static boolean fatal(Throwable e) {
        return e instanceof AuthorizationException || e instanceof AuthenticationException || e instanceof UnsupportedVersionException
            || e instanceof IllegalStateException;
    }

    /** Kafka's name of an error (PRODUCER_FENCED, REQUEST_TIMED_OUT, ...), else the exception's class. The "error state" wrapper
     *  that the Java producer throws after an earlier failure is named by that failure. */
    static String errorName(Throwable e) {
        if (e.getClass() == KafkaException.class && e.getCause() instanceof KafkaException) {
            return errorName(e.getCause());
        }
        Errors error = Errors.forException(e);
        if (error != Errors.UNKNOWN_SERVER_ERROR || e instanceof UnknownServerException) {
            return error.name();
        }
        return e.getClass().getSimpleName();
    }

    // A failed send: the Java exception's simple name -> the name failsafe's librdkafka producer gives the same failure, and
    // whether it proves the write was not appended (fail) or leaves it unknown (info): verifiable_events.JAVA_EXCEPTION_ERRORS.
    static final Map<String, String> SEND_ERRORS = new HashMap<>();
    static final Set<String> DEFINITE_SEND_FAILURES = Set.of("NotEnoughReplicasException", "RecordTooLargeException",
        "RecordBatchTooLargeException", "InvalidRecordException", "InvalidRequiredAcksException", "TopicAuthorizationException",
        "ClusterAuthorizationException", "UnknownTopicOrPartitionException", "InvalidTopicException");

    static {
        String[] names = {
            "NotEnoughReplicasException", "NOT_ENOUGH_REPLICAS", "RecordTooLargeException", "MSG_SIZE_TOO_LARGE",
            "RecordBatchTooLargeException", "RECORD_LIST_TOO_LARGE", "InvalidRecordException", "INVALID_RECORD",
            "InvalidRequiredAcksException", "INVALID_REQUIRED_ACKS", "TopicAuthorizationException", "TOPIC_AUTHORIZATION_FAILED",
            "ClusterAuthorizationException", "CLUSTER_AUTHORIZATION_FAILED", "UnknownTopicOrPartitionException", "UNKNOWN_TOPIC_OR_PART",
            "InvalidTopicException", "TOPIC_EXCEPTION", "NotEnoughReplicasAfterAppendException", "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
            "TimeoutException", "MSG_TIMED_OUT", "NetworkException", "NETWORK_EXCEPTION", "DisconnectException", "TRANSPORT",
            "NotLeaderOrFollowerException", "NOT_LEADER_FOR_PARTITION", "LeaderNotAvailableException", "LEADER_NOT_AVAILABLE",
            "KafkaStorageException", "KAFKA_STORAGE_ERROR", "CorruptRecordException", "INVALID_MSG",
            "OutOfOrderSequenceException", "OUT_OF_ORDER_SEQUENCE_NUMBER", "UnknownProducerIdException", "UNKNOWN_PRODUCER_ID",
            "InvalidProducerEpochException", "INVALID_PRODUCER_EPOCH",
        };
        for (int i = 0; i < names.length; i += 2) {
            SEND_ERRORS.put(names[i], names[i + 1]);
        }
    }

    static String sendErrorName(Throwable e) {
        String name = SEND_ERRORS.get(e.getClass().getSimpleName());
        return name != null ? name : errorName(e);
    }

    static String sendOutcome(Throwable e) {
        return DEFINITE_SEND_FAILURES.contains(e.getClass().getSimpleName()) ? "fail" : "info";
    }

    // -- one transactional producer (txn_session.py's TxnSession) ----------------------------------------------------
    static final class Send {
        final String topic;
        final String key;
        final String value;
        final int txn;

        Send(String topic, String key, String value, int txn) {
            this.topic = topic;
            this.key = key;
            this.value = value;
            this.txn = txn;
        }
    }

    static final class Session {
        final Properties props;
        final String transactionalId;
        final Ops out;
        final Stop stop;
        final long commitTimeoutNs;
        final Map<Integer, Send> inFlight = new ConcurrentHashMap<>();
        KafkaProducer<String, String> producer;
        int txn = -1;
        int sendId = 0;
        int txnWrites = 0;
        // Set while send() runs on the driver's thread: a callback then is the producer refusing the write before it was appended.
        Thread sending;
        RuntimeException refusal;
        volatile boolean closing;

        Session(Properties props, Ops out, Stop stop, double commitTimeoutS) {
            this.props = props;
            this.transactionalId = props.getProperty("transactional.id");
            this.out = out;
            this.stop = stop;
            this.commitTimeoutNs = (long) (commitTimeoutS * 1e9);
        }

        void open() {
            producer = new KafkaProducer<>(props);
            while (true) {
                try {
                    producer.initTransactions();
                    return;
                } catch (KafkaException e) {
                    if (fenced(e)) {
                        throw new Fenced("initTransactions of " + transactionalId + ": fenced: " + errorName(e));
                    }
                    if (!(e instanceof RetriableException) || stop.stopped()) {
                        throw new DriverError("initTransactions of " + transactionalId + ": " + errorName(e) + ": " + e.getMessage());
                    }
                }
            }
        }

        void replace() {
            drop();
            open();
        }

        void close() {
            drop();
        }

        void drop() {
            if (producer != null) {
                closing = true;
                try {
                    // At once: a graceful close aborts the open transaction, and no abort may follow a commit error.
                    producer.close(Duration.ZERO);
                } catch (RuntimeException e) {
                    // Closing a fenced producer may throw; it is dropped all the same.
                }
                producer = null;
                closing = false;
            }
            for (Map.Entry<Integer, Send> e : new TreeMap<>(inFlight).entrySet()) {
                Send s = e.getValue();
                out.op("info", "send", "id", e.getKey(), "topic", s.topic, "key", s.key, "value", s.value, "txn", s.txn, "error", CLOSED_IN_FLIGHT);
            }
            inFlight.clear();
            out.flush();
        }

        int begin() {
            txn += 1;
            txnWrites = 0;
            out.op("invoke", "txn", "txn", txn, "transactional_id", transactionalId);
            try {
                producer.beginTransaction();
            } catch (KafkaException | IllegalStateException e) {
                complete("fail", e);
                fatalOrReplace(e);
                throw e;
            }
            return txn;
        }

        /** One write of the open transaction; throws Refused when the producer refuses it (recorded as a failed send). */
        void produce(String topic, String key, String value) {
            int id = sendId++;
            int t = txn;
            Send s = new Send(topic, key, value, t);
            inFlight.put(id, s);
            out.op("invoke", "send", "id", id, "topic", topic, "key", key, "value", value, "txn", t);
            sending = Thread.currentThread();
            refusal = null;
            try {
                producer.send(new ProducerRecord<>(topic, key, value), (md, ex) -> report(id, md, ex));
            } catch (KafkaException | IllegalStateException e) {
                refusal = e;
            } finally {
                sending = null;
            }
            if (refusal != null) {
                RuntimeException e = refusal;
                if (inFlight.remove(id) != null) {
                    out.op("fail", "send", "id", id, "topic", topic, "key", key, "value", value, "txn", t, "error", sendErrorName(e));
                }
                throw new Refused(e);
            }
            txnWrites += 1;
            if (txnWrites == 1) {
                // Down the pipe now: a client fault waits for a transaction with a write in it (faults/transactions.py).
                out.flush();
            }
        }

        void report(int id, RecordMetadata md, Exception ex) {
            if (ex != null && Thread.currentThread() == sending) {
                // Failed inside send(), before the accumulator took it: produce() records it and the transaction is aborted.
                refusal = ex instanceof RuntimeException ? (RuntimeException) ex : new KafkaException(ex);
                return;
            }
            if (ex != null && closing) {
                return;  // drop() reports it as closed in flight
            }
            Send s = inFlight.remove(id);
            if (s == null) {
                return;
            }
            if (ex == null) {
                Long offset = md.hasOffset() && md.offset() >= 0 ? md.offset() : null;
                out.op("ok", "send", "id", id, "topic", s.topic, "partition", md.partition(), "offset", offset, "key", s.key, "value", s.value,
                       "txn", s.txn);
            } else {
                Integer partition = md != null && md.partition() >= 0 ? md.partition() : null;
                out.op(sendOutcome(ex), "send", "id", id, "topic", s.topic, "partition", partition, "key", s.key, "value", s.value, "txn", s.txn,
                       "error", sendErrorName(ex));
            }
        }

        /** Abort the open transaction (on purpose, or after {@code error} before any commit): fail once the abort returned. */
        String abort(RuntimeException error) {
            out.op("invoke", "txn-end", "txn", txn, "end", "abort");
            out.flush();
            long deadline = System.nanoTime() + commitTimeoutNs;
            while (true) {
                try {
                    producer.abortTransaction();
                    complete("fail", error);
                    return "fail";
                } catch (KafkaException | IllegalStateException e) {
                    // A timed-out abort may be called again (the Java producer keeps its result).
                    if (e instanceof TimeoutException && System.nanoTime() < deadline && !stop.stopped()) {
                        continue;
                    }
                    complete("info", e);
                    fatalOrReplace(e);
                    return "info";
                }
            }
        }

        /** Commit the open transaction (with a consumer's offsets when given): ok, fail or info, as the file's comment says. */
        String commit(Map<TopicPartition, OffsetAndMetadata> offsets, ConsumerGroupMetadata group) {
            long deadline = System.nanoTime() + commitTimeoutNs;
            List<Object> recorded = null;
            if (offsets != null && !offsets.isEmpty()) {
                try {
                    producer.sendOffsetsToTransaction(offsets, group);
                } catch (KafkaException | IllegalStateException e) {
                    if (fenced(e) || fatal(e)) {
                        complete("info", e);
                        fatalOrReplace(e);
                        return "info";
                    }
                    // Nothing was asked to commit yet: an abort that returns proves the transaction did not commit.
                    return abort(e);
                }
                recorded = new ArrayList<>();
                for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                    recorded.add(obj("topic", e.getKey().topic(), "partition", e.getKey().partition(), "offset", e.getValue().offset()));
                }
            }
            out.op("invoke", "txn-end", "txn", txn, "end", "commit", "offsets", recorded);
            out.flush();
            while (true) {
                try {
                    // Returns once every write of the transaction was acknowledged (their callbacks ran) and the EndTxn was.
                    producer.commitTransaction();
                    complete("ok", null);
                    return "ok";
                } catch (KafkaException | IllegalStateException e) {
                    // The Java producer lets a commit that timed out be called again: it waits on the same EndTxn.
                    if (e instanceof TimeoutException && System.nanoTime() < deadline && !stop.stopped()) {
                        continue;
                    }
                    complete("info", e);
                    fatalOrReplace(e);
                    return "info";
                }
            }
        }

        void complete(String outcome, Throwable error) {
            out.op(outcome, "txn", "txn", txn, "transactional_id", transactionalId, "error", error == null ? null : errorName(error));
            out.flush();
        }

        void fatalOrReplace(Throwable e) {
            if (fenced(e)) {
                throw new Fenced(transactionalId + " was fenced: " + errorName(e));
            }
            replace();
        }
    }

    // -- stopping ------------------------------------------------------------------------------------------------------
    static final class Stop {
        final CountDownLatch latch = new CountDownLatch(1);

        void set() {
            latch.countDown();
        }

        boolean stopped() {
            return latch.getCount() == 0;
        }

        /** Wait up to nanos; true when stopped meanwhile. */
        boolean await(long nanos) {
            try {
                return latch.await(Math.max(0, nanos), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return true;
            }
        }
    }

    static String valueFor(String process, int seq) {
        return process + ":" + seq;
    }

    static Random rng(long seed, String process) {
        CRC32 crc = new CRC32();
        crc.update((seed + ":" + process).getBytes(StandardCharsets.UTF_8));
        return new Random(crc.getValue());
    }

    // -- writer (txn_producer.py) ----------------------------------------------------------------------------------------
    static void runWriter(Args a, Ops out, Stop stop) {
        Random rng = rng(a.seed, a.process);
        Session session = new Session(a.producer, out, stop, a.commitTimeoutS);
        long intervalNs = a.ratePerS > 0 ? (long) (1e9 / a.ratePerS) : 0;
        long nextAt = System.nanoTime();
        int seq = 0;
        int begun = 0;
        String fencedBy = null;
        try {
            session.open();
            while (!stop.stopped() && (a.count < 0 || begun < a.count)) {
                if (intervalNs > 0) {
                    if (stop.await(nextAt - System.nanoTime())) {
                        break;
                    }
                    nextAt += intervalNs;
                }
                try {
                    session.begin();
                } catch (KafkaException | IllegalStateException e) {
                    continue;
                }
                begun += 1;
                try {
                    int writes = a.minWrites + rng.nextInt(a.maxWrites - a.minWrites + 1);
                    for (int i = 0; i < writes; i++) {
                        String key = a.keys > 0 ? "k" + rng.nextInt(a.keys) : null;
                        String topic = a.topics.get(rng.nextInt(a.topics.size()));
                        // Every attempt takes a new value, so a refused write's value is never written again.
                        String value = valueFor(a.process, seq++);
                        session.produce(topic, key, value);
                    }
                } catch (Refused e) {
                    session.abort((RuntimeException) e.getCause());
                    continue;
                }
                if (rng.nextDouble() < a.abortProbability) {
                    session.abort(null);
                } else {
                    session.commit(null, null);
                }
            }
        } catch (Fenced e) {
            fencedBy = e.getMessage();
        } finally {
            session.close();
        }
        if (fencedBy != null) {
            out.op("info", "close", "error", fencedBy);
        } else {
            out.op("info", "close");
        }
        out.flush();
    }

    // -- processor (ctp.py) ----------------------------------------------------------------------------------------------
    static List<Object> partitions(Collection<TopicPartition> tps) {
        List<Object> list = new ArrayList<>();
        for (TopicPartition tp : tps) {
            list.add(obj("topic", tp.topic(), "partition", tp.partition()));
        }
        return list;
    }

    /** The next offset to read of each partition the batch read from (what its transaction commits), by topic and partition. */
    static Map<TopicPartition, OffsetAndMetadata> nextOffsets(List<ConsumerRecord<String, String>> batch) {
        Map<String, ConsumerRecord<String, String>> last = new TreeMap<>();
        Map<String, TopicPartition> tps = new HashMap<>();
        for (ConsumerRecord<String, String> r : batch) {
            String k = sortKey(r);
            ConsumerRecord<String, String> seen = last.get(k);
            if (seen == null || r.offset() > seen.offset()) {
                last.put(k, r);
                tps.put(k, new TopicPartition(r.topic(), r.partition()));
            }
        }
        Map<TopicPartition, OffsetAndMetadata> offsets = new LinkedHashMap<>();
        for (Map.Entry<String, ConsumerRecord<String, String>> e : last.entrySet()) {
            ConsumerRecord<String, String> r = e.getValue();
            offsets.put(tps.get(e.getKey()), new OffsetAndMetadata(r.offset() + 1, r.leaderEpoch(), ""));
        }
        return offsets;
    }

    static Map<TopicPartition, Long> firstOffsets(List<ConsumerRecord<String, String>> batch) {
        Map<String, ConsumerRecord<String, String>> first = new TreeMap<>();
        for (ConsumerRecord<String, String> r : batch) {
            first.putIfAbsent(sortKey(r), r);
        }
        Map<TopicPartition, Long> offsets = new LinkedHashMap<>();
        for (ConsumerRecord<String, String> r : first.values()) {
            offsets.put(new TopicPartition(r.topic(), r.partition()), r.offset());
        }
        return offsets;
    }

    static String sortKey(ConsumerRecord<String, String> r) {
        return r.topic() + "\u0000" + String.format("%010d", r.partition());
    }

    @SuppressWarnings("deprecation")  // close(Duration): Kafka 3.9's jars have no CloseOptions
    static void runProcessor(Args a, Ops out, Stop stop) {
        Random rng = rng(a.seed, a.process);
        Session session = new Session(a.producer, out, stop, a.commitTimeoutS);
        String group = a.group;
        int seq = 0;
        String fencedBy = null;
        KafkaConsumer<String, String> consumer = null;
        try {
            session.open();
            consumer = new KafkaConsumer<>(a.consumer);
            consumer.subscribe(List.of(a.input), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                    out.op("info", "assign", "group", group, "partitions", partitions(tps));
                    out.flush();
                }

                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                    out.op("info", "revoke", "group", group, "partitions", partitions(tps));
                    out.flush();
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> tps) {
                    out.op("info", "revoke", "group", group, "partitions", partitions(tps), "lost", true);
                    out.flush();
                }
            });
            while (!stop.stopped()) {
                List<ConsumerRecord<String, String>> batch = new ArrayList<>();
                try {
                    ConsumerRecords<String, String> records = consumer.poll(POLL);
                    for (ConsumerRecord<String, String> r : records) {
                        batch.add(r);
                    }
                } catch (KafkaException e) {
                    out.op("fail", "poll", "group", group, "error", errorName(e));
                    stop.await(POLL.toNanos());
                    continue;
                }
                if (batch.isEmpty()) {
                    continue;
                }
                int txn;
                try {
                    txn = session.begin();
                } catch (KafkaException | IllegalStateException e) {
                    rewind(consumer, batch);
                    continue;
                }
                List<Object> read = new ArrayList<>();
                for (ConsumerRecord<String, String> r : batch) {
                    read.add(obj("topic", r.topic(), "partition", r.partition(), "offset", r.offset(), "key", r.key(), "value", r.value()));
                }
                out.op("ok", "poll", "group", group, "txn", txn, "records", read);
                try {
                    for (ConsumerRecord<String, String> r : batch) {
                        session.produce(a.output, r.key(), valueFor(a.process, seq++));
                    }
                } catch (Refused e) {
                    session.abort((RuntimeException) e.getCause());
                    rewind(consumer, batch);
                    continue;
                }
                String outcome;
                if (rng.nextDouble() < a.abortProbability) {
                    session.abort(null);
                    outcome = "fail";
                } else {
                    outcome = session.commit(nextOffsets(batch), consumer.groupMetadata());
                }
                if (outcome.equals("fail")) {
                    // A consumer does not rewind by itself after an abort (KAFKA-17582): without the seek the batch would be skipped.
                    rewind(consumer, batch);
                } else if (outcome.equals("info")) {
                    // Not known whether it committed (the new producer's initTransactions finished it either way): go on from the
                    // offsets the group holds, as a restarted worker would.
                    resumeFromCommitted(consumer, batch, stop);
                }
            }
        } catch (Fenced e) {
            fencedBy = e.getMessage();
        } finally {
            session.close();
            if (consumer != null) {
                try {
                    consumer.close(CONSUMER_CLOSE_TIMEOUT);
                } catch (KafkaException e) {
                    // A fenced zombie's group membership is already gone: leaving the group may fail.
                }
            }
        }
        out.op("info", "close", "group", group, "error", fencedBy);
        out.flush();
    }

    static void rewind(KafkaConsumer<String, String> consumer, List<ConsumerRecord<String, String>> batch) {
        for (Map.Entry<TopicPartition, Long> e : firstOffsets(batch).entrySet()) {
            try {
                consumer.seek(e.getKey(), e.getValue());
            } catch (IllegalStateException ex) {
                // No longer assigned: whoever owns it now reads from the group's committed offset.
            }
        }
    }

    static void resumeFromCommitted(KafkaConsumer<String, String> consumer, List<ConsumerRecord<String, String>> batch, Stop stop) {
        Set<TopicPartition> tps = firstOffsets(batch).keySet();
        Map<TopicPartition, OffsetAndMetadata> committed = null;
        while (!stop.stopped()) {
            try {
                // At read_committed the consumer asks for stable offsets: one still pending in a transaction is waited for.
                committed = consumer.committed(tps, COMMITTED_TIMEOUT);
                break;
            } catch (KafkaException e) {
                continue;
            }
        }
        if (committed == null) {
            return;
        }
        for (TopicPartition tp : tps) {
            OffsetAndMetadata offset = committed.get(tp);
            try {
                if (offset != null) {
                    consumer.seek(tp, offset.offset());
                } else {
                    consumer.seekToBeginning(List.of(tp));
                }
            } catch (IllegalStateException e) {
                // No longer assigned.
            }
        }
    }

    // -- the command line ------------------------------------------------------------------------------------------------
    static final class Args {
        String mode;
        String process;
        Properties producer = new Properties();
        Properties consumer = new Properties();
        List<String> topics = new ArrayList<>();
        double ratePerS = 20.0;
        long count = -1;
        int minWrites = 1;
        int maxWrites = 8;
        int keys = 16;
        double abortProbability = 0.1;
        double commitTimeoutS = 30.0;
        long seed = 0;
        String input;
        String output;
        String group;
        int batch = 20;

        static Args parse(String[] argv) {
            Args a = new Args();
            if (argv.length == 0) {
                throw new IllegalArgumentException("no mode given");
            }
            a.mode = argv[0];
            if (!a.mode.equals("writer") && !a.mode.equals("processor")) {
                throw new IllegalArgumentException("unknown mode " + a.mode + ": writer or processor");
            }
            for (int i = 1; i < argv.length; i += 2) {
                String flag = argv[i];
                if (i + 1 >= argv.length) {
                    throw new IllegalArgumentException(flag + " needs a value");
                }
                String v = argv[i + 1];
                switch (flag) {
                    case "--process": a.process = v; break;
                    case "--producer-property": property(a.producer, v, flag); break;
                    case "--consumer-property": property(a.consumer, v, flag); break;
                    case "--topic": a.topics.add(v); break;
                    case "--rate-per-s": a.ratePerS = number(flag, v); break;
                    case "--count": a.count = (long) number(flag, v); break;
                    case "--min-writes": a.minWrites = (int) number(flag, v); break;
                    case "--max-writes": a.maxWrites = (int) number(flag, v); break;
                    case "--keys": a.keys = (int) number(flag, v); break;
                    case "--abort-probability": a.abortProbability = number(flag, v); break;
                    case "--commit-timeout-s": a.commitTimeoutS = number(flag, v); break;
                    case "--seed": a.seed = (long) number(flag, v); break;
                    case "--input": a.input = v; break;
                    case "--output": a.output = v; break;
                    case "--group": a.group = v; break;
                    case "--batch": a.batch = (int) number(flag, v); break;
                    default: throw new IllegalArgumentException("unknown option " + flag);
                }
            }
            if (a.process == null) throw new IllegalArgumentException("--process is required");
            for (String required : new String[] {"bootstrap.servers", "transactional.id"}) {
                if (!a.producer.containsKey(required)) throw new IllegalArgumentException("--producer-property " + required + "=... is required");
            }
            if (a.mode.equals("writer")) {
                if (a.topics.isEmpty()) throw new IllegalArgumentException("writer: --topic is required");
                if (a.minWrites < 1 || a.minWrites > a.maxWrites) throw new IllegalArgumentException("writer: needs 1 <= --min-writes <= --max-writes");
            } else {
                if (a.input == null || a.output == null || a.group == null) throw new IllegalArgumentException("processor: --input, --output and --group are required");
                if (a.batch < 1) throw new IllegalArgumentException("processor: --batch must be at least 1");
            }
            String string = "org.apache.kafka.common.serialization.StringSerializer";
            a.producer.putIfAbsent("key.serializer", string);
            a.producer.putIfAbsent("value.serializer", string);
            a.consumer.putIfAbsent("bootstrap.servers", a.producer.getProperty("bootstrap.servers"));
            a.consumer.putIfAbsent("group.id", a.group == null ? "" : a.group);
            a.consumer.putIfAbsent("isolation.level", "read_committed");
            a.consumer.putIfAbsent("enable.auto.commit", "false");
            a.consumer.putIfAbsent("auto.offset.reset", "earliest");
            a.consumer.putIfAbsent("max.poll.records", String.valueOf(a.batch));
            a.consumer.putIfAbsent("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
            a.consumer.putIfAbsent("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
            return a;
        }

        static void property(Properties props, String kv, String flag) {
            int eq = kv.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException(flag + " " + kv + ": expected KEY=VALUE");
            props.setProperty(kv.substring(0, eq), kv.substring(eq + 1));
        }

        static double number(String flag, String v) {
            try {
                return Double.parseDouble(v);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(flag + " " + v + ": not a number");
            }
        }
    }

    public static void main(String[] argv) {
        if (argv.length > 0 && (argv[0].equals("--help") || argv[0].equals("-h"))) {
            System.out.println(USAGE);
            System.exit(0);
        }
        Args args;
        try {
            args = Args.parse(argv);
        } catch (IllegalArgumentException e) {
            System.err.println("TxnDriver: " + e.getMessage() + " (--help for usage)");
            System.exit(2);
            return;
        }
        // stdout is the ops pipe: nothing else may write there (a library's stray println goes to stderr).
        OutputStream stdout = new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16);
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8));
        Ops out = new Ops(stdout, args.process);
        Stop stop = new Stop();
        Thread main = Thread.currentThread();
        // SIGTERM: stop after the current transaction, as failsafe's Python workers do; the JVM ends when main has finished.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop.set();
            try {
                main.join(STOP_JOIN_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "failsafe-stop"));
        Thread stdin = new Thread(() -> {
            byte[] buf = new byte[4096];
            try {
                while (System.in.read(buf) >= 0) {
                    // The runner keeps stdin open while it wants this worker: EOF is its going away.
                }
            } catch (IOException e) {
                // A broken stdin is the runner gone too.
            }
            stop.set();
        }, "failsafe-stdin");
        stdin.setDaemon(true);
        stdin.start();
        int code = 0;
        try {
            if (args.mode.equals("writer")) {
                runWriter(args, out, stop);
            } else {
                runProcessor(args, out, stop);
            }
        } catch (DriverError e) {
            System.err.println(args.process + ": " + e.getMessage());
            code = 1;
        } catch (RuntimeException e) {
            System.err.println(args.process + ": " + e.getClass().getSimpleName() + ": " + e.getMessage());
            code = 1;
        }
        try {
            out.flush();
        } catch (DriverError e) {
            code = 1;
        }
        System.err.flush();
        // halt, not exit: exit would wait for the shutdown hook, which (on SIGTERM) waits for this thread. The client log's
        // appender writes through, so nothing is left unwritten.
        Runtime.getRuntime().halt(code);
    }
}
