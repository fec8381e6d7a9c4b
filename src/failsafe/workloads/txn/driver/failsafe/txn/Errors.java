/*
 * The driver's own exceptions, and Kafka's errors under the names and outcomes failsafe's librdkafka workers give them
 * (failsafe/workloads/outcomes.py, verifiable_events.JAVA_EXCEPTION_ERRORS).
 */
package failsafe.txn;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.common.errors.UnsupportedVersionException;

final class Errors {
    private Errors() {
    }

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

    /** Args.supersededFile, set once by TxnDriver.main. */
    static volatile String supersededFile;

    static boolean fenced(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            // InvalidProducerEpochException is abortable (the coordinator aborted a transaction that ran past its timeout,
            // and bumped the epoch), not a fence.
            if (t instanceof ProducerFencedException) {
                return true;
            }
        }
        return false;
    }

    /** What a superseded instance hears when Kafka turns it away: its epoch is older than the newer instance's. */
    static boolean staleEpoch(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof ProducerFencedException || t instanceof InvalidProducerEpochException) {
                return true;
            }
        }
        return false;
    }

    /** A newer instance of this client exists: the workload said so (the file) before this one could go on. Such an
     *  instance stops on any error, since a new producer of its own would fence the newer one and take the id back.
     *  ProducerFencedException alone does not say it: the Java client also throws it at a producer whose transaction the
     *  coordinator aborted past transaction.timeout.ms while that coordinator was paused, with no other instance anywhere
     *  (campaign txn-kafka-java-tv2, seed 2913, run 0: a 14 s pause of the coordinator's broker). */
    static boolean superseded() {
        String file = supersededFile;
        return file != null && java.nio.file.Files.exists(java.nio.file.Path.of(file));
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
        // Kafka's Errors by its full name: this class has the same simple name.
        org.apache.kafka.common.protocol.Errors error = org.apache.kafka.common.protocol.Errors.forException(e);
        if (error != org.apache.kafka.common.protocol.Errors.UNKNOWN_SERVER_ERROR || e instanceof UnknownServerException) {
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
}
