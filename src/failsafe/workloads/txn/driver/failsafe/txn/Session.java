/*
 * One transactional producer and its outcome rules (txn_session.py's TxnSession), as TxnDriver's comment gives them.
 */
package failsafe.txn;

import static failsafe.txn.Errors.errorName;
import static failsafe.txn.Errors.fatal;
import static failsafe.txn.Errors.fenced;
import static failsafe.txn.Errors.sendErrorName;
import static failsafe.txn.Errors.sendOutcome;
import static failsafe.txn.Errors.staleEpoch;
import static failsafe.txn.Errors.superseded;
import static failsafe.txn.Ops.obj;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TimeoutException;

import failsafe.txn.Errors.DriverError;
import failsafe.txn.Errors.Fenced;
import failsafe.txn.Errors.Refused;

final class Session {
    static final String CLOSED_IN_FLIGHT = "PRODUCER_CLOSED_IN_FLIGHT";

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
        if (superseded()) {
            throw new Fenced(transactionalId + " was superseded: no new producer, which would fence the newer instance");
        }
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

    /** Commit the open transaction (with a consumer's offsets when given): ok, fail or info, as TxnDriver's comment says. */
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
        if (superseded()) {
            throw new Fenced(transactionalId + (staleEpoch(e) ? " was fenced: " : " was superseded: ") + errorName(e));
        }
        if (abortable(e)) {
            // The Java client's own way back (KIP-588): abort on this producer, which bumps its epoch itself. A new producer
            // would fence whoever holds the id now, and this instance may be a zombie that a newer one superseded: it
            // must hear ProducerFencedException, not take the id back.
            try {
                producer.abortTransaction();
                return;
            } catch (KafkaException | IllegalStateException abortError) {
                if (superseded()) {
                    throw new Fenced(transactionalId + (staleEpoch(abortError) ? " was fenced: " : " was superseded: ") + errorName(abortError));
                }
            }
        }
        replace();
    }

    /** InvalidProducerEpochException (the coordinator bumped the epoch, e.g. aborting a transaction past its timeout) and
     *  TransactionAbortableException: the client recovers from them by aborting. */
    static boolean abortable(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof org.apache.kafka.common.errors.InvalidProducerEpochException
                    || t instanceof org.apache.kafka.common.errors.TransactionAbortableException) {
                return true;
            }
        }
        return false;
    }
}
