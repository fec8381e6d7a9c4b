/*
 * failsafe's transactional clients on Kafka's Java client: the same ops as failsafe's librdkafka workers
 * (failsafe/workloads/txn_session.py, txn_producer.py, ctp.py), one JSON object per line on stdout.
 *
 *   writer     random transactions of min..max writes over the topics, rate_per_s a second, some aborted on purpose
 *              (Writer.java)
 *   processor  consume-transform-produce: read the input at read_committed, one output record per input record,
 *              the input offsets committed in the same transaction (sendOffsetsToTransaction) (Processor.java)
 *
 * The outcome rules are txn_session.py's (Session.java): a transaction is ok only when commitTransaction returned; fail
 * only when abortTransaction returned and no commit was asked for; info otherwise. After a commit error there is no
 * abort: a commit that timed out is called again until --commit-timeout-s, and then, as after any other error, the
 * producer is closed at once (close(0): a graceful close would abort the open transaction) and a new one with the same
 * transactional.id runs initTransactions, which fences the old one and finishes its transaction. A fenced producer
 * records its transaction as info, writes a close op whose error says "fenced", and the driver exits 0.
 *
 * Compiled by failsafe at first use, every file of this package together, against the Kafka distribution's jars
 * (failsafe/workloads/txn_java.py); nothing else on the classpath. Stops after the current transaction on SIGTERM or
 * when stdin closes.
 */
package failsafe.txn;

import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import failsafe.txn.Errors.DriverError;

public final class TxnDriver {
    static final String USAGE = "usage: TxnDriver writer|processor --process NAME --producer-property bootstrap.servers=HOST:PORT "
        + "--producer-property transactional.id=ID [--producer-property K=V ...] [--seed N] [--abort-probability P] [--commit-timeout-s S] [--superseded-file F] [--client-config FILE] "
        + "writer: --topic T [--topic T2 ...] [--rate-per-s R] [--count N] [--min-writes N] [--max-writes N] [--keys N]; "
        + "processor: --input T --output T --group G [--batch N] [--consumer-property K=V ...]";
    // Below the worker pool's 45 s SIGKILL: a transaction that cannot finish by then is the pool's to kill.
    static final long STOP_JOIN_MS = 40_000;

    private TxnDriver() {
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
        Errors.supersededFile = args.supersededFile;
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
                Writer.run(args, out, stop);
            } else {
                Processor.run(args, out, stop);
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
