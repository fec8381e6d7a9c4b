/*
 * The writer (txn_producer.py): random transactions of min..max writes over the topics, rate_per_s a second, some aborted
 * on purpose.
 */
package failsafe.txn;

import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.zip.CRC32;

import org.apache.kafka.common.KafkaException;

import failsafe.txn.Errors.Fenced;
import failsafe.txn.Errors.Refused;

final class Writer {
    private Writer() {
    }

    /** The value of a process's seq-th write (the processor's too, as producer.py's value_for is both workers'). */
    static String valueFor(String process, int seq) {
        return process + ":" + seq;
    }

    /** The run's choices, drawn from the seed and the process name (the processor's too). */
    static Random rng(long seed, String process) {
        CRC32 crc = new CRC32();
        crc.update((seed + ":" + process).getBytes(StandardCharsets.UTF_8));
        return new Random(crc.getValue());
    }

    static void run(Args a, Ops out, Stop stop) {
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
}
