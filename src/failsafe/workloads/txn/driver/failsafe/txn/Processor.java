/*
 * The processor (ctp.py): consume-transform-produce. It reads the input at read_committed, writes one output record per
 * input record, and commits the input offsets in the same transaction (sendOffsetsToTransaction).
 */
package failsafe.txn;

import static failsafe.txn.Errors.errorName;
import static failsafe.txn.Ops.obj;
import static failsafe.txn.Writer.rng;
import static failsafe.txn.Writer.valueFor;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;

import failsafe.txn.Errors.Fenced;
import failsafe.txn.Errors.Refused;

final class Processor {
    static final Duration POLL = Duration.ofMillis(200);
    static final Duration COMMITTED_TIMEOUT = Duration.ofSeconds(10);
    static final Duration CONSUMER_CLOSE_TIMEOUT = Duration.ofSeconds(10);

    private Processor() {
    }

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
    static void run(Args a, Ops out, Stop stop) {
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
}
