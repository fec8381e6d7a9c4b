/*
 * The command line (TxnDriver.USAGE): refused with an IllegalArgumentException whose message main prints in one line.
 */
package failsafe.txn;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

final class Args {
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
    // Made by the workload just before it lets a frozen instance go on, once a newer one holds its transactional.id.
    String supersededFile;
    // A secured cluster's client settings (security.protocol, TLS stores, sasl.jaas.config): a file only its owner
    // reads, so that no secret is on the command line. They go to the producer and the consumer, over any other.
    String clientConfig;

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
                case "--superseded-file": a.supersededFile = v; break;
                case "--client-config": a.clientConfig = v; break;
                default: throw new IllegalArgumentException("unknown option " + flag);
            }
        }
        if (a.process == null) throw new IllegalArgumentException("--process is required");
        if (a.clientConfig != null) {
            Properties security = load(a.clientConfig);
            a.producer.putAll(security);
            a.consumer.putAll(security);
        }
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

    static Properties load(String path) {
        Properties props = new Properties();
        try (Reader reader = Files.newBufferedReader(Paths.get(path))) {
            props.load(reader);
        } catch (IOException e) {
            throw new IllegalArgumentException("--client-config " + path + ": " + e.getMessage());
        }
        return props;
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
